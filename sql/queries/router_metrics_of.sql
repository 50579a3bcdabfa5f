-- Held-out metrics of one router version.
select method, metric, value from router_metrics where router_id = $router_id order by method, metric
