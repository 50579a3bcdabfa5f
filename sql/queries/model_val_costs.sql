-- c(m): each active model's mean per-query cost on the validation prompts (a result without a cost takes
-- the model's default cost). Models with no known cost there come back with a null cost. A model with battles
-- on validation prompts but no results there (pairwise evidence only) takes its default cost: battles carry none.
select r.model, avg(coalesce(r.cost, m.default_cost)) as cost, count(*) as n
from results as r
join prompt_splits as s on s.prompt_id = r.prompt_id and s.split = 'val'
join models as m on m.model = r.model and m.status = 'active'
group by r.model
union all
select m.model, m.default_cost as cost, 0 as n
from models as m
where m.status = 'active'
  and exists (select 1 from battles as b join prompt_splits as s on s.prompt_id = b.prompt_id and s.split = 'val'
              where m.model = b.model_a or m.model = b.model_b)
  and not exists (select 1 from results as r join prompt_splits as s on s.prompt_id = r.prompt_id and s.split = 'val'
                  where r.model = m.model)
order by model
