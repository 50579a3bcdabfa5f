-- One batch of checked outcome rows. Needs outcomes_batch registered by uniroute/ingest/outcomes.py.
insert into outcomes_read
select row_number, decision_id, score, cost, input_tokens, output_tokens
from outcomes_batch
