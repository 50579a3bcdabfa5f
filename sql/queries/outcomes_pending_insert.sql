-- A file's outcomes whose decision is not stored yet: they wait for it (sql/schema/020_pending_outcomes.sql).
-- Needs outcomes_state.
insert into pending_outcomes (decision_id, score, cost, input_tokens, output_tokens, row_number, source_file,
                              file_hash, received_at)
select decision_id, score, cost, input_tokens, output_tokens, row_number, $source_file, $file_hash, $now
from outcomes_state where state = 'unknown'
