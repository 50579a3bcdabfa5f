-- The prompts that receive new results from the file. Needs ingest_accepted. Grain: one row per prompt.
create or replace temp table ingest_accepted_prompts as
select pid, count(*) as results
from ingest_accepted
group by pid
