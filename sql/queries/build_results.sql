-- Every result of an active model that has some cost, as matrix coordinates: i indexes prompts in
-- prompt_id order, j models in name order. A result without a cost takes the model's default cost, else
-- the model's mean known cost (its best per-query estimate). Models with no cost at all are left out
-- (build_excluded_models lists them).
with costed as (
    select m.model, m.default_cost
    from models as m
    where m.status = 'active'
      and (m.default_cost is not null
           or exists (select 1 from results as r where r.model = m.model and r.cost is not null))
),
model_index as (
    select model, default_cost, (row_number() over (order by model) - 1)::integer as j from costed
),
active as (
    select r.prompt_id, r.model, r.score, r.cost from results as r join costed as c on c.model = r.model
),
prompt_index as (
    select prompt_id, (row_number() over (order by prompt_id) - 1)::integer as i
    from (select distinct prompt_id from active)
)
select p.i, mi.j, a.score,
       coalesce(a.cost, mi.default_cost, avg(a.cost) over (partition by a.model)) as cost,
       a.cost is null as cost_filled
from active as a
join prompt_index as p on p.prompt_id = a.prompt_id
join model_index as mi on mi.model = a.model
