-- Active models with battles on validation prompts but no results there (pairwise evidence only), with their
-- default cost (battles carry none): the models a build adds to its served router from battles.
select m.model, m.default_cost as cost
from models as m
where m.status = 'active'
  and exists (select 1 from battles as b join prompt_splits as s on s.prompt_id = b.prompt_id and s.split = 'val'
              where m.model = b.model_a or m.model = b.model_b)
  and not exists (select 1 from results as r join prompt_splits as s on s.prompt_id = r.prompt_id and s.split = 'val'
                  where r.model = m.model)
order by m.model
