-- The router versions a decision record may name (uniroute/ingest/decision_checks.py): the models each routes,
-- its K, its embedder and its centroids' size (null for a kind without centroids).
select r.router_id, r.k, r.models, r.embedder_id,
       (select len(c.center) from centroids as c where c.clustering_id = r.clustering_id limit 1) as dim
from routers as r
