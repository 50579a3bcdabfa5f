insert into champion_moves (router_id, from_router_id, forced, missing, moved_at)
values ($router_id, $from_router_id, $forced, $missing, $moved_at)
