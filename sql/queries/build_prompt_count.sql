-- How many prompts a build reads (build_prompts' rows, without their texts).
select count(*) as n
from prompts as p
where p.prompt_id in (select prompt_id from build_prompt_ids)
