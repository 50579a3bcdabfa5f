-- A file's outcomes that cannot land, with the reason (the quarantine table every input shares): another score for
-- a decision that has one. (An outcome for a decision not stored yet waits: outcomes_pending_insert.sql.) Needs
-- outcomes_state.
insert into quarantine (file_hash, path, row_number, reason, raw, quarantined_at)
select $file_hash, $source_file, row_number,
       'the decision already has score ' || stored_score || ' from an earlier outcome',
       decision_id || ',' || score, $now
from outcomes_state where state = 'conflict'
