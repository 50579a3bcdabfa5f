-- One router version by id.
select * from routers where router_id = $router_id
