-- How many router versions and publications the store recorded that MLflow does not hold yet (what a follow-up
-- or the next reconciliation logs): the counts of mlflow_pending_routers and mlflow_pending_publications.
select
    (
        select count(*) from routers as r
        where r.candidate_of is null
          and not exists (select 1 from router_mlflow as m where m.router_id = r.router_id)
    ) as routers,
    (
        select count(*) from publications as p
        where not exists (select 1 from publication_mlflow as m where m.version = p.version)
    ) as publications
