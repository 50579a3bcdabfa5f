-- The rows of the build matrices: prompts with a result of an active, costed model, in prompt_id order,
-- with their text and (fixed) split.
select p.prompt_id, p.text, s.split
from prompts as p
left join prompt_splits as s on s.prompt_id = p.prompt_id  -- splits are assigned before a build reads them
where p.prompt_id in (
    select r.prompt_id from results as r join models as m on m.model = r.model and m.status = 'active'
    where m.default_cost is not null or exists (select 1 from results as c where c.model = m.model and c.cost is not null)
)
order by p.prompt_id
