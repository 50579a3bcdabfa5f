-- The new battles of the file. Needs ingest_pairs_accepted, ingest_prompts, ingest_models.
insert into battles (prompt_id, model_a, model_b, winner, preference, source_file, file_hash, ingested_at)
select p.prompt_id, a.model, b.model, c.winner, c.preference, $source_file, $file_hash, $now
from ingest_pairs_accepted as c
join ingest_prompts as p on p.pid = c.pid
join ingest_models as a on a.mid = c.aid
join ingest_models as b on b.mid = c.bid
