-- The validation prompts a model has answered already (its results on them): `onboarding-set --model` continues.
select distinct r.prompt_id
from results as r
join prompt_splits as s on s.prompt_id = r.prompt_id and s.split = 'val'
where r.model = $model
