-- The rows of the build matrices: prompts with a result of an active, costed model, in prompt_id order,
-- with their text and (fixed) split (build_prompt_ids says which prompts).
select p.prompt_id, p.text, s.split
from prompts as p
left join prompt_splits as s on s.prompt_id = p.prompt_id  -- splits are assigned before a build reads them
where p.prompt_id in (select prompt_id from build_prompt_ids)
order by p.prompt_id
