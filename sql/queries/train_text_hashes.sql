-- The distinct text hashes of the training prompts (their stored split) a build reads (build_prompts: a result of
-- an active, costed model): what K-means on the embedding dataset keeps of each partition (pipeline/clusters_dask.py).
with costed as (
    select m.model
    from priced_models as m
    where m.status = 'active'
      and (m.default_cost is not null
           or exists (select 1 from results as r where r.model = m.model and r.cost is not null))
)
select distinct p.text_hash
from prompts as p
join prompt_splits as s on s.prompt_id = p.prompt_id
where s.split = 'train'
  and p.prompt_id in (select r.prompt_id from results as r semi join costed as c on c.model = r.model)
