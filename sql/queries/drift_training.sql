-- What drift is measured against: the champion's training prompts per cluster, and the distance to its centroid
-- that 95% of them are within (a traffic prompt beyond it is far from every cluster the router was fitted on).
-- Reads the per-connection `embeddings` view. Grain: one row per cluster with training prompts.
with train as (
    select a.cluster, list_distance(e.vector, c.center) as distance
    from routers as r
    join cluster_assignments as a on a.clustering_id = r.clustering_id
    join prompt_splits as s on s.prompt_id = a.prompt_id and s.split = 'train'
    join prompts as p on p.prompt_id = a.prompt_id
    join embeddings as e on e.text_hash = p.text_hash and e.embedder_id = r.embedder_id
    join centroids as c on c.clustering_id = r.clustering_id and c.cluster = a.cluster
    where r.router_id = $router_id
)
select cluster, count(*) as prompts, (select quantile_cont(distance, 0.95) from train) as far_threshold
from train
group by cluster
order by cluster
