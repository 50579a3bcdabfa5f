-- The ingested_files row of a file content, if that content was ingested before (0 or 1 rows).
select file_hash, path, format, rows_accepted, rows_quarantined, new_prompts, new_models, ingested_at
from ingested_files
where file_hash = $file_hash
