-- New models of the file, active, with no default cost yet. Needs the ingest_* tables of the check.
insert into models (model, default_cost, status, first_seen)
select m.model, null, 'active', $now
from ingest_accepted_models a
join ingest_model_state s on s.mid = a.mid
join ingest_models m on m.mid = a.mid
where not s.model_stored
