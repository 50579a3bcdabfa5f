-- The router versions a build weighed: its K-means and LearnedMap routers, and the champion before it.
-- Grain: one row per router version, with its role.
select role, router_id, kind, k, val_area, promoted, reason, created_at
from (
    select case kind when 'kmeans' then 'this build (K-means)' else 'this build (LearnedMap)' end as role, *
    from routers where router_id in ($router_id, $learned_map_router_id)
    union all
    (select 'champion before this build' as role, *
     from routers
     where kind = 'kmeans' and promoted and router_id <> $router_id
       and created_at < (select created_at from routers where router_id = $router_id)
     order by created_at desc limit 1)
)
order by case role when 'this build (K-means)' then 0 when 'this build (LearnedMap)' then 1 else 2 end
