-- What a file's outcomes would do. Needs outcomes_state.
select count(*) filter (where state = 'new') as new,
       count(*) filter (where state in ('unknown', 'conflict')) as quarantined,
       count(*) filter (where state <> 'unknown') as known
from outcomes_state
