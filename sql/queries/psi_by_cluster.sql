-- Per (model, cluster) loss sum and count behind Psi (paper eq. 9), for the active models.
-- Needs a relation `prompt_clusters(prompt_id, cluster)` registered on the connection (store.registered):
-- only results on those prompts count. Grain of the output: one row per (model, cluster) with >= 1 result.
select
    r.model,
    pc.cluster,
    sum(1.0 - r.score) as loss_sum,
    count(*) as n
from results as r
join prompt_clusters as pc on pc.prompt_id = r.prompt_id
join models as m on m.model = r.model
where m.status = 'active'
group by r.model, pc.cluster
order by r.model, pc.cluster
