-- Format keys (RouterBench sample_id) of the file's prompts that received results, where not yet known.
-- Needs ingest_accepted_prompts, ingest_prompts.
insert into prompt_keys (key_kind, key, prompt_id, file_hash, first_seen)
select distinct $key_kind, p.sample_key, p.prompt_id, $file_hash, $now
from ingest_accepted_prompts as a
join ingest_prompts as p on p.pid = a.pid
where p.sample_key is not null
  and not exists (
      select 1 from prompt_keys as k
      where k.key_kind = $key_kind and k.key = p.sample_key and k.prompt_id = p.prompt_id
  )
