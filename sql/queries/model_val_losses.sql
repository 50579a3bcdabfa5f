-- The given active models' losses (1 - score) on every validation prompt they answered: what a K-NN router's
-- label table takes from a new model (aligned to its reference prompts by prompt id).
select r.model, r.prompt_id, 1.0 - r.score as loss
from results as r
join prompt_splits as s on s.prompt_id = r.prompt_id and s.split = 'val'
join models as m on m.model = r.model and m.status = 'active'
where list_contains($models, r.model)
order by r.model, r.prompt_id
