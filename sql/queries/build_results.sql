-- Every result of an active model that has some cost, as matrix coordinates: i indexes prompts in
-- prompt_id order, j models in name order. A result without a cost takes the model's default cost, else
-- the model's mean known cost (its best per-query estimate). Models with no cost at all are left out
-- (build_excluded_models lists them). The fill cost is a per-model aggregate joined in, not a window over
-- every result: a window partitions and materialises all rows (10 GB at 100M results), a join streams.
with model_index as (
    select model, coalesce(default_cost, mean_cost) as fill_cost,
           (row_number() over (order by model) - 1)::integer as j
    from build_costed_models
),
prompt_index as (
    select prompt_id, (row_number() over (order by prompt_id) - 1)::integer as i
    from build_prompt_ids
)
select p.i, mi.j, a.score, coalesce(a.cost, mi.fill_cost) as cost, a.cost is null as cost_filled
from results as a
join model_index as mi on mi.model = a.model
join prompt_index as p on p.prompt_id = a.prompt_id
