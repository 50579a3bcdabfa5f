-- The prompts that receive new battles from the file (the table ingest_insert_prompts reads).
-- Needs ingest_pairs_accepted. Grain: one row per prompt.
create or replace temp table ingest_accepted_prompts as
select pid, count(*) as results
from ingest_pairs_accepted
group by pid
