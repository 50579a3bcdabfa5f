-- The training data ingested so far: the ordered content hashes of every ingested file but the traffic's own
-- (decision records and outcomes, which land every few minutes and train nothing), hashed again in Python. Drift
-- is announced once per champion and this (pipeline/traffic/drift.py).
select coalesce(string_agg(file_hash, ',' order by file_hash), '') as files
from ingested_files
where format not in ('decisions-jsonl', 'outcomes')
