-- The champion before the current one (0 or 1 rows), walking back: the newest version promoted (by a build, an
-- onboarding or a retirement) before the current champion was itself created. What `uniroute rollback` goes back
-- to when no version is named; called again it goes one further back, never back and forth between two.
with current as (
    select router_id from champion_history order by became_at desc, router_id desc limit 1
)
select r.router_id
from routers as r, current as c
join routers as cur on cur.router_id = c.router_id
where r.promoted and r.router_id <> cur.router_id
  and (r.created_at < cur.created_at or (r.created_at = cur.created_at and r.router_id < cur.router_id))
order by r.created_at desc, r.router_id desc
limit 1
