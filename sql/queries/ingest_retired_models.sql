-- Retired models this file gives results for: stored, and said, but they stay retired.
-- Needs ingest_accepted_models, ingest_models.
select m.model
from ingest_accepted_models as a
join ingest_models as m on m.mid = a.mid
join models as s on s.model = m.model
where s.status = 'retired'
order by m.model
