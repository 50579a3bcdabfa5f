-- The newest promoted router version of a kind.
select * from routers where kind = $kind and promoted order by created_at desc, router_id desc limit 1
