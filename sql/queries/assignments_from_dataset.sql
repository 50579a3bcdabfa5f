-- Every build prompt's cluster under a clustering, from the assignment files the workers wrote (registered as
-- `assigned`: text_hash, cluster; clusters_dask.assign_partitions) joined to the prompts by their text hash: the
-- driver never holds the N clusters. Prompts with the same text share a row of the files and get its cluster.
insert into cluster_assignments (clustering_id, prompt_id, cluster)
select $clustering_id, p.prompt_id, a.cluster
from prompts as p
join (select text_hash, any_value(cluster) as cluster from assigned group by text_hash) as a
  on a.text_hash = p.text_hash
where p.prompt_id in (select prompt_id from build_prompt_ids)
