-- Every model with its status, its per-call price in force (`default_cost`, the name `set-cost` always showed) or
-- token prices and the date they hold from, the mean cost and count of its results, and when it was first seen
-- (`uniroute models list`): a model whose rows carry costs shows them even without a price.
select m.model, m.status, m.default_cost, m.input_per_mtok, m.output_per_mtok, m.price_from,
       avg(r.cost) as mean_result_cost, count(r.score) as results, m.first_seen
from priced_models as m
left join results as r on r.model = m.model
group by m.model, m.status, m.default_cost, m.input_per_mtok, m.output_per_mtok, m.price_from, m.first_seen
order by m.model
