-- The champion: the newest router version written with promoted = true.
select * from routers where promoted order by created_at desc, router_id desc limit 1
