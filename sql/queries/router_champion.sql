-- The champion: the newest row of champion_history (the newest promoted version, or the one a later rollback chose).
select r.* from routers as r
join (select router_id from champion_history order by became_at desc, router_id desc limit 1) using (router_id)
