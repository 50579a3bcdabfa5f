-- The MLflow model version each alias should name: `champion` the store's champion; `challenger` the newest
-- build the store did not promote, if it is newer than the champion.
with champion as (
    select router_id, created_at from routers where promoted order by created_at desc, router_id desc limit 1
), challenger as (
    select r.router_id from routers as r, champion as c
    where not r.promoted and r.candidate_of is null and r.origin = 'build' and r.created_at > c.created_at
    order by r.created_at desc, r.router_id desc limit 1
)
select 'champion' as alias, m.model_version from champion join router_mlflow as m using (router_id)
union all
select 'challenger' as alias, m.model_version from challenger join router_mlflow as m using (router_id)
