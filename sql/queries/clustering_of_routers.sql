-- The clustering each of some router versions measured its Psi on (a replay reuses logged clusters on the same one).
select router_id, clustering_id from routers where list_contains($router_ids, router_id)
