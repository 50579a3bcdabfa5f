-- What a file's outcomes would do. Needs outcomes_state.
select count(*) filter (where state = 'new') as new,
       count(*) filter (where state = 'conflict') as quarantined,
       count(*) filter (where state = 'unknown') as waiting
from outcomes_state
