-- Active models that have a cost (per result or default), in name order: the columns of the build matrices.
select m.model
from priced_models as m
where m.status = 'active'
  and (m.default_cost is not null or exists (select 1 from results as r where r.model = m.model and r.cost is not null))
order by m.model
