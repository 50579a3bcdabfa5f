-- The validation prompts a new model can be asked to answer (one row each), with their cluster under the
-- champion's clustering (null where the prompt has none: a kind without clusters, or a prompt not assigned yet).
select p.prompt_id, p.text, a.cluster
from prompts as p
join prompt_splits as s on s.prompt_id = p.prompt_id and s.split = 'val'
left join cluster_assignments as a on a.prompt_id = p.prompt_id and a.clustering_id = $clustering_id
order by p.prompt_id
