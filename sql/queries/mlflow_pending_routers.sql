-- Router versions MLflow should hold but the store has not seen registered: every version except the
-- candidates a build compared, oldest first.
select r.router_id, r.origin, r.kind, r.data_fingerprint, r.reason
from routers as r
where r.candidate_of is null
  and not exists (select 1 from router_mlflow as m where m.router_id = r.router_id)
order by r.created_at, r.router_id
