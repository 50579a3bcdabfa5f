-- Every model with its status, default cost, the mean cost and count of its results, and when it was first seen
-- (`uniroute models list`): a model whose rows carry costs shows them even without a default cost.
select m.model, m.status, m.default_cost, avg(r.cost) as mean_result_cost, count(r.score) as results,
       m.first_seen
from models as m
left join results as r on r.model = m.model
group by m.model, m.status, m.default_cost, m.first_seen
order by m.model
