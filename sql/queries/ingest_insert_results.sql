-- The new results of the file. Needs ingest_accepted, ingest_prompts, ingest_models.
insert into results (prompt_id, model, score, cost, raw_score, source_file, file_hash, ingested_at)
select p.prompt_id, m.model, a.score, a.cost, a.raw_score, $source_file, $file_hash, $now
from ingest_accepted as a
join ingest_prompts as p on p.pid = a.pid
join ingest_models as m on m.mid = a.mid
