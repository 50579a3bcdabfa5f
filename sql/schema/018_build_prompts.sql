-- Grain: one row per prompt a build reads: a prompt with a result of an active model that has a cost (per result
-- or a price in force). The one definition of "the build's prompts" that the build's matrices, its embedding
-- fill, its K-means sample and its cluster assignments all select from (sql/queries/build_*.sql).
-- Grain: one row per active model with a cost (per result or a price in force), with its default cost and its mean
-- known cost (what a result without a cost takes). One group-by over the results: the correlated "exists a result
-- with a cost" this replaced took 6.3 s of DuckDB per query at 20M results against 0.9 s
-- (benchmarks/scale/dask_plane.py).
create or replace view build_costed_models as
select m.model, m.default_cost, r.mean_cost
from priced_models as m
left join (select model, count(cost) as costs, avg(cost) as mean_cost from results group by model) as r
    on r.model = m.model
where m.status = 'active' and (m.default_cost is not null or r.costs > 0);

create or replace view build_prompt_ids as
select distinct r.prompt_id
from results as r
semi join build_costed_models as c on c.model = r.model;
