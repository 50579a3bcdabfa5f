-- Publications not yet logged as MLflow runs, oldest first.
select p.version, p.router_id, p.pool, p.fingerprint, p.path
from publications as p
where not exists (select 1 from publication_mlflow as m where m.version = p.version)
order by p.created_at, p.version
