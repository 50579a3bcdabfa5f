-- Record an ingested file content, in the same transaction as its rows.
insert into ingested_files
    (file_hash, path, format, rows_accepted, rows_quarantined, new_prompts, new_models, ingested_at)
values ($file_hash, $path, $format, $rows_accepted, $rows_quarantined, $new_prompts, $new_models, $now)
