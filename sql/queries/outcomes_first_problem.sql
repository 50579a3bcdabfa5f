-- The first quarantined outcome of a file and why. Needs outcomes_state.
select row_number,
       case when state = 'unknown' then 'unknown decision_id ' || decision_id
            else 'decision_id ' || decision_id || ' already has score ' || stored_score || ', not ' || score
       end as reason
from outcomes_state where state in ('unknown', 'conflict') order by row_number limit 1
