-- The first quarantined outcome of a file and why (an outcome for a decision not stored yet waits: not a problem).
-- Needs outcomes_state.
select row_number, 'decision_id ' || decision_id || ' already has score ' || stored_score || ', not ' || score
       as reason
from outcomes_state where state = 'conflict' order by row_number limit 1
