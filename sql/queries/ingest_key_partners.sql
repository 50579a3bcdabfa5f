-- Stored prompts that share a format key (RouterBench sample_id) with one of the file's prompts under another
-- id: candidates for merging one prompt split across rows of different files. Needs the relation
-- ingest_sample_keys(key, prompt_id, models) registered by uniroute.ingest.
-- Grain: one row per (file prompt, stored prompt) pair.
select
    s.key,
    s.prompt_id as staged_prompt_id,
    s.models as staged_models,
    k.prompt_id as stored_prompt_id,
    p.text as stored_text,
    p.split as stored_split,
    (select list(distinct r.model order by r.model) from results as r where r.prompt_id = k.prompt_id) as stored_models
from ingest_sample_keys as s
join prompt_keys as k on k.key_kind = $key_kind and k.key = s.key and k.prompt_id <> s.prompt_id
join prompts as p on p.prompt_id = k.prompt_id
order by s.key, k.prompt_id
