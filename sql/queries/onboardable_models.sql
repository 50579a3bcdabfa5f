-- Active models that have validation results or battles and a cost there (per result or default): the models
-- the champion router should route.
select r.model
from results as r
join prompt_splits as s on s.prompt_id = r.prompt_id and s.split = 'val'
join priced_models as m on m.model = r.model and m.status = 'active'
group by r.model
having avg(coalesce(r.cost, m.default_cost)) is not null
union
select m.model
from priced_models as m
join battles as b on m.model = b.model_a or m.model = b.model_b
join prompt_splits as s on s.prompt_id = b.prompt_id and s.split = 'val'
where m.status = 'active' and m.default_cost is not null
order by model
