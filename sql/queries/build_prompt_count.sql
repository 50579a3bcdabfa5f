-- How many prompts a build reads (build_prompts' rows, without their texts).
with costed as (
    select m.model
    from priced_models as m
    where m.status = 'active'
      and (m.default_cost is not null
           or exists (select 1 from results as r where r.model = m.model and r.cost is not null))
)
select count(*) as n
from prompts as p
where p.prompt_id in (select r.prompt_id from results as r semi join costed as c on c.model = r.model)
