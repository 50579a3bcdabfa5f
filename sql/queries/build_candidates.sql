-- The router versions a build weighed: the router it serves, the candidates it compared it with, and the
-- champion before it (the newest row of champion_history before the build, a rollback's choice included).
-- Grain: one row per router version, with its role.
select role, router_id, kind, k, val_area, promoted, reason, created_at
from (
    select case when candidate_of is null then 'this build (served)' else 'this build (candidate)' end as role, *
    from routers where router_id = $router_id or candidate_of = $router_id
    union all
    (select 'champion before this build' as role, r.*
     from routers as r
     join (select router_id from champion_history
           where router_id <> $router_id
             and became_at < (select created_at from routers where router_id = $router_id)
           order by became_at desc, router_id desc limit 1) using (router_id))
)
order by case role when 'this build (served)' then 0 when 'this build (candidate)' then 1 else 2 end, kind
