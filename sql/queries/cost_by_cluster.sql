-- Per (model, cluster) cost sum and count of the costed results behind its Psi cell, for the per-cluster model
-- costs a cost cap checks (routers/cluster/cluster_costs.py). Needs a relation `prompt_clusters(prompt_id, cluster)`
-- registered on the connection (store.registered): the prompts Psi is measured on. Results without a cost (a
-- model costed by `models set-cost` alone) do not count. Grain: one row per (model, cluster) with >= 1 costed
-- result.
select
    r.model,
    pc.cluster,
    sum(r.cost) as cost_sum,
    count(*) as n
from results as r
join prompt_clusters as pc on pc.prompt_id = r.prompt_id
where r.cost is not null
group by r.model, pc.cluster
order by r.model, pc.cluster
