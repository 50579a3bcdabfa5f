-- Validation prompts of battles between active models that have no cluster yet under this clustering: the
-- prompts whose embedding puts pairwise evidence into Psi (results' prompts are assigned by the build).
select distinct p.prompt_id, p.text, p.text_hash
from battles as b
join prompts as p on p.prompt_id = b.prompt_id
join prompt_splits as s on s.prompt_id = b.prompt_id and s.split = 'val'
join models as ma on ma.model = b.model_a and ma.status = 'active'
join models as mb on mb.model = b.model_b and mb.status = 'active'
where not exists (
    select 1 from cluster_assignments as a
    where a.clustering_id = $clustering_id and a.prompt_id = b.prompt_id
)
order by p.prompt_id
