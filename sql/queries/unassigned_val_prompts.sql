-- Validation prompts that some of the given models answered but that have no cluster yet under this
-- clustering (new prompts that arrived with a new model's results): the only prompts onboarding embeds.
select distinct p.prompt_id, p.text, p.text_hash
from results as r
join prompts as p on p.prompt_id = r.prompt_id
join prompt_splits as s on s.prompt_id = r.prompt_id
where s.split = 'val'
  and list_contains($models, r.model)
  and not exists (
      select 1 from cluster_assignments as a
      where a.clustering_id = $clustering_id and a.prompt_id = r.prompt_id
  )
order by p.prompt_id
