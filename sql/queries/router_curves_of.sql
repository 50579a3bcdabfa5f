-- Held-out deferral curve vertices of one router version.
select method, point, cost, score from router_curves where router_id = $router_id order by method, point
