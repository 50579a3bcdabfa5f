-- The champion's id and validation Area (0 or 1 rows), without loading the router.
select router_id, val_area from routers where promoted order by created_at desc, router_id desc limit 1
