-- Each pool model's share of traffic at each budget of one publication. Grain: one row per (budget, model).
select budget, model, traffic_share, n_clusters
from traffic_share
where version = $version and grid = 'budget'
order by budget, model
