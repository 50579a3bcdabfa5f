-- Every result of an active model, with its prompt text and cost (the model's default where the row has none).
select r.prompt_id, p.text as prompt, r.model, r.score, coalesce(r.cost, m.default_cost) as cost
from results as r
join models as m on m.model = r.model and m.status = 'active'
join prompts as p on p.prompt_id = r.prompt_id
