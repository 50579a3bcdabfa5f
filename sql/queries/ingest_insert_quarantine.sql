-- The file's quarantined input rows. Needs ingest_quarantined.
insert into quarantine (file_hash, path, row_number, reason, raw, quarantined_at)
select $file_hash, $source_file, row_number, reason, raw, $now
from ingest_quarantined
