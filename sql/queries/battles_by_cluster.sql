-- Per (cluster, pair of active models) battles and summed outcome behind Psi from pairwise preferences.
-- Needs a relation `prompt_clusters(prompt_id, cluster)` registered on the connection (store.registered): only
-- battles on those prompts count. Each battle is oriented to the pair's first model by name: `w` sums the
-- outcome for model_a of the output row. Grain: one row per (cluster, model_a, model_b) with >= 1 battle.
select
    pc.cluster,
    least(b.model_a, b.model_b) as model_a,
    greatest(b.model_a, b.model_b) as model_b,
    count(*) as n,
    sum(case when b.model_a < b.model_b then b.preference else 1 - b.preference end) as w
from battles as b
join prompt_clusters as pc on pc.prompt_id = b.prompt_id
join models as ma on ma.model = b.model_a and ma.status = 'active'
join models as mb on mb.model = b.model_b and mb.status = 'active'
group by pc.cluster, least(b.model_a, b.model_b), greatest(b.model_a, b.model_b)
order by pc.cluster, model_a, model_b
