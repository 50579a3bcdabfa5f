-- New models of the file, active, with no default cost yet. Needs the ingest_* tables of the check.
insert into models (model, default_cost, status, first_seen)
select m.model, null, 'active', $now
from ingest_accepted_models as a
join ingest_model_state as s on s.mid = a.mid
join ingest_models as m on m.mid = a.mid
where not s.model_stored
