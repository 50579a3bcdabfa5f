-- Validation prompts and their cluster under one clustering: the prompts Psi is measured on.
select a.prompt_id, a.cluster
from cluster_assignments as a
join prompt_splits as s on s.prompt_id = a.prompt_id
where a.clustering_id = $clustering_id and s.split = 'val'
