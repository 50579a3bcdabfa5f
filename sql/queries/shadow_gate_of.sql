-- The shadow gate of one build's router (none when the build had no champion to compare with).
select * from shadow_gates where build_router_id = $router_id
