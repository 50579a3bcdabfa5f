-- A file's outcomes that cannot land, with the reason (the quarantine table every input shares). Needs
-- outcomes_state.
insert into quarantine (file_hash, path, row_number, reason, raw, quarantined_at)
select $file_hash, $source_file, row_number,
       case when state = 'unknown' then 'unknown decision_id (no recorded decision has it)'
            else 'the decision already has score ' || stored_score || ' from an earlier outcome' end,
       decision_id || ',' || score, $now
from outcomes_state where state in ('unknown', 'conflict')
