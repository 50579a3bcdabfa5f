-- Whether a router version was ever the champion (0 or 1 rows): only those can be rolled back to.
select router_id from champion_history where router_id = $router_id limit 1
