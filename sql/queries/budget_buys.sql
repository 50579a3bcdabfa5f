-- What each budget of one publication buys: the expected validation score and normalised cost routing gets
-- there, and each pool model's share of the traffic. A router that routes per prompt (LearnedMap, K-NN)
-- publishes no per-cluster routes: its budgets come with one row whose model is null.
-- Grain: one row per (budget, model in the pool), budget grid only.
select p.router_id, b.budget, b.expected_score, b.expected_cost, b.calibration, t.model, t.traffic_share
from published_budgets as b
join publications as p on p.version = b.version
left join traffic_share as t on t.version = b.version and t.grid = 'budget' and t.budget = b.budget
where b.version = $version and b.grid = 'budget'
order by b.budget, t.model
