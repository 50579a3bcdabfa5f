-- The champion's id and validation Area (0 or 1 rows), without loading the router.
select r.router_id, r.val_area from routers as r
join (select router_id from champion_history order by became_at desc, router_id desc limit 1) using (router_id)
