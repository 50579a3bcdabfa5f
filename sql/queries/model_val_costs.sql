-- c(m): each active model's mean per-query cost on the validation prompts (a result without a cost takes
-- the model's default cost). Models with no known cost there come back with a null cost.
select r.model, avg(coalesce(r.cost, m.default_cost)) as cost, count(*) as n
from results as r
join prompt_splits as s on s.prompt_id = r.prompt_id and s.split = 'val'
join models as m on m.model = r.model and m.status = 'active'
group by r.model
order by r.model
