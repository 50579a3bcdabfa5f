-- The rows of the build matrices without their text (build_prompts' rows, in the same prompt_id order): the
-- prompt's id, its text hash (the embedding dataset's key) and its stored split. A build holds these for every
-- prompt; the texts only where it embeds or fits an embedder (pipeline/build/matrices.py).
select p.prompt_id, p.text_hash, s.split
from prompts as p
left join prompt_splits as s on s.prompt_id = p.prompt_id  -- splits are assigned before a build reads them
where p.prompt_id in (select prompt_id from build_prompt_ids)
order by p.prompt_id
