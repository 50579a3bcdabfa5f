-- The centroids of one clustering, in cluster order.
select cluster, center from centroids where clustering_id = $clustering_id order by cluster
