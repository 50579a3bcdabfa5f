-- Active models without any cost: left out of cost-based routing until `uniroute models set-cost`.
select m.model
from priced_models as m
where m.status = 'active' and m.model not in (select model from build_costed_models)
order by m.model
