-- The newest build's router that was not promoted (a challenger; not a candidate kind stored beside a build).
select router_id from routers
where origin = 'build' and not promoted and candidate_of is null
order by created_at desc, router_id desc
limit 1
