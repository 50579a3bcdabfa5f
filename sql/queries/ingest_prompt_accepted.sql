-- How many new results the file adds to one prompt. Needs ingest_accepted_prompts, ingest_prompts. One row.
select coalesce(sum(a.results), 0) as n
from ingest_accepted_prompts as a
join ingest_prompts as p on p.pid = a.pid
where p.prompt_id = $prompt_id
