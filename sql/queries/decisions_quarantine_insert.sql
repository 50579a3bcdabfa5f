-- A decisions file's quarantined lines. Needs decision_rejects (uniroute/ingest/decisions.py REJECT_SCHEMA).
insert into decision_quarantine (file_hash, path, line_number, decision_id, reason, raw, quarantined_at)
select $file_hash, $path, line_number, decision_id, reason, raw, $now
from decision_rejects
