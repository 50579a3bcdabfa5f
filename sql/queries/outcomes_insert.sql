-- A file's new outcomes. Needs outcomes_state.
insert into outcomes
select decision_id, score, cost, input_tokens, output_tokens, $source_file, $file_hash, $now
from outcomes_state where state = 'new'
