-- The file's first quarantined row and why (0 or 1 rows). Needs ingest_quarantined.
select row_number, reason from ingest_quarantined order by row_number limit 1
