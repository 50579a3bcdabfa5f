-- A file's outcomes, one per decision_id (its first row: exact repeats of a row, the only repeats left once
-- outcomes_read_clash found none). Needs outcomes_read.
-- Grain: one row per decision_id of the file.
create or replace temp table outcomes_staged as
select row_number, decision_id, score, cost, input_tokens, output_tokens
from outcomes_read
qualify row_number() over (partition by decision_id order by row_number) = 1
