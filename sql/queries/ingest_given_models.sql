-- Every model the file gives a valid result for, new or already stored. Needs ingest_models, ingest_candidates.
select distinct m.model
from ingest_candidates as c
join ingest_models as m on m.mid = c.mid
order by m.model
