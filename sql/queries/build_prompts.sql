-- The rows of the build matrices: prompts with a result of an active, costed model, in prompt_id order,
-- with their text and (fixed) split. The costed models are found once (as in build_results), not per result.
with costed as (
    select m.model
    from priced_models as m
    where m.status = 'active'
      and (m.default_cost is not null
           or exists (select 1 from results as r where r.model = m.model and r.cost is not null))
)
select p.prompt_id, p.text, s.split
from prompts as p
left join prompt_splits as s on s.prompt_id = p.prompt_id  -- splits are assigned before a build reads them
where p.prompt_id in (select r.prompt_id from results as r semi join costed as c on c.model = r.model)
order by p.prompt_id
