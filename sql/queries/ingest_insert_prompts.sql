-- New prompts of the file (those with at least one new result). Needs the ingest_* tables of the check.
insert into prompts (prompt_id, text, text_hash, benchmark, split, source_file, first_seen)
select p.prompt_id, p.text, sha256(p.text), p.benchmark, p.split, $source_file, $now
from ingest_accepted_prompts as a
join ingest_prompt_state as s on s.pid = a.pid
join ingest_prompts as p on p.pid = a.pid
where not s.prompt_stored
