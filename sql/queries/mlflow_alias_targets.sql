-- The MLflow model version each alias should name: `champion` the store's champion; `challenger` the newest
-- build the store did not promote, if it was built after the champion became the champion (a rollback makes the
-- challengers built before it stale).
with champion as (
    select router_id, became_at from champion_history order by became_at desc, router_id desc limit 1
), challenger as (
    select r.router_id from routers as r, champion as c
    where not r.promoted and r.candidate_of is null and r.origin = 'build' and r.created_at > c.became_at
    order by r.created_at desc, r.router_id desc limit 1
)
select 'champion' as alias, m.model_version from champion join router_mlflow as m using (router_id)
union all
select 'challenger' as alias, m.model_version from challenger join router_mlflow as m using (router_id)
