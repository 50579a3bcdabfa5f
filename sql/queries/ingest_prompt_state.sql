-- Each prompt of the file as the store knows it: stored or new, and whether the store disagrees on its text or
-- split. Needs ingest_prompts(pid, prompt_id, text, benchmark, split, sample_key) registered by uniroute.ingest.
-- Grain: one row per prompt of the file.
create or replace temp table ingest_prompt_state as
select
    p.pid,
    s.prompt_id is not null as prompt_stored,
    coalesce(s.text <> p.text, false) as text_differs,
    coalesce(s.split <> p.split, false) as split_clash,
    -- the prompt's split in the store after this file (when both are given they agree, or the rows conflict)
    coalesce(s.split, p.split) as effective_split,
    s.split as stored_split,
    s.source_file as stored_source
from ingest_prompts as p
left join prompts as s on s.prompt_id = p.prompt_id
