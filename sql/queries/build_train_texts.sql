-- The texts of a build's training prompts (build_prompts' rows with split 'train', in prompt_id order): what a
-- fitted embedder (TF-IDF) is fitted on.
select p.text
from prompts as p
join prompt_splits as s on s.prompt_id = p.prompt_id
where s.split = 'train'
  and p.prompt_id in (select prompt_id from build_prompt_ids)
order by p.prompt_id
