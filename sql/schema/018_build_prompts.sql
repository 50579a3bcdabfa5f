-- Grain: one row per prompt a build reads: a prompt with a result of an active model that has a cost (per result
-- or a price in force). The one definition of "the build's prompts" that the build's matrices, its embedding
-- fill, its K-means sample and its cluster assignments all select from (sql/queries/build_*.sql).
create or replace view build_prompt_ids as
with costed as (
    select m.model
    from priced_models as m
    where m.status = 'active'
      and (m.default_cost is not null
           or exists (select 1 from results as r where r.model = m.model and r.cost is not null))
)
select distinct r.prompt_id
from results as r
semi join costed as c on c.model = r.model;
