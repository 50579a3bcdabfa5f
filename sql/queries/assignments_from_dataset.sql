-- Every build prompt's cluster under a clustering, from the assignment files the workers wrote (registered as
-- `assigned`: text_hash, cluster; clusters_dask.assign_partitions) joined to the prompts by their text hash: the
-- driver never holds the N clusters. Prompts with the same text share a row of the files and get its cluster.
with costed as (
    select m.model
    from priced_models as m
    where m.status = 'active'
      and (m.default_cost is not null
           or exists (select 1 from results as r where r.model = m.model and r.cost is not null))
)
insert into cluster_assignments (clustering_id, prompt_id, cluster)
select $clustering_id, p.prompt_id, a.cluster
from prompts as p
join (select text_hash, any_value(cluster) as cluster from assigned group by text_hash) as a
  on a.text_hash = p.text_hash
where p.prompt_id in (select r.prompt_id from results as r semi join costed as c on c.model = r.model)
