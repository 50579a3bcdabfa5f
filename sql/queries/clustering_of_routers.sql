-- The clustering each of some router versions measured its Psi on, and the router (a replay reuses logged clusters
-- of a one-hot router on the same clustering).
select router_id, clustering_id, router from routers where list_contains($router_ids, router_id)
