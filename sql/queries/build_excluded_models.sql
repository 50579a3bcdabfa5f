-- Active models without any cost: left out of cost-based routing until `uniroute models set-cost`.
select m.model
from priced_models as m
where m.status = 'active' and m.default_cost is null
  and not exists (select 1 from results as r where r.model = m.model and r.cost is not null)
order by m.model
