-- A per-connection view: it reads `embeddings`, itself a temp view each connection creates over the Parquet
-- dataset (uniroute/store/embeddings.py), which a view stored in the file could not name. Created right after it.

-- Grain: one row per (day, router_id) of a router with centroids: the share of the day's decisions farther from
-- their nearest centroid than 95% of the router's training prompts are from theirs (far_threshold), i.e. traffic
-- the clusters were not fitted on.
create or replace temp view traffic_drift as
with training as (
    select r.router_id, quantile_cont(list_distance(e.vector, c.center), 0.95) as far_threshold,
           avg(list_distance(e.vector, c.center)) as training_mean_distance
    from routers as r
    join cluster_assignments as a on a.clustering_id = r.clustering_id
    join prompt_splits as s on s.prompt_id = a.prompt_id and s.split = 'train'
    join prompts as p on p.prompt_id = a.prompt_id
    join embeddings as e on e.text_hash = p.text_hash and e.embedder_id = r.embedder_id
    join centroids as c on c.clustering_id = r.clustering_id and c.cluster = a.cluster
    where r.router_id in (select distinct router_id from decisions where centroid_distance is not null)
    group by 1
)
select d.decided_at::date as day, d.router_id, count(*) as decisions,
       avg((d.centroid_distance > t.far_threshold)::int) as far_share,
       t.far_threshold, avg(d.centroid_distance) as mean_distance, t.training_mean_distance
from decisions as d join training as t on t.router_id = d.router_id
where d.centroid_distance is not null
group by 1, 2, t.far_threshold, t.training_mean_distance;
