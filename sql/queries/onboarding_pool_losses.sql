-- What the pool knows for choosing an onboarding set: the losses (1 - score) of the given models (the champion's
-- active pool) on training and validation prompts, with each prompt's split and cluster under the champion's
-- clustering (null: none). Grain: one row per (prompt, model) result.
select r.prompt_id, r.model, 1.0 - r.score as loss, s.split, a.cluster
from results as r
join prompt_splits as s on s.prompt_id = r.prompt_id and s.split in ('train', 'val')
left join cluster_assignments as a on a.prompt_id = r.prompt_id and a.clustering_id = $clustering_id
where list_contains($models, r.model)
