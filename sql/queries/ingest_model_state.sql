-- Each model of the file: already in the store or new. Needs ingest_models(mid, model). Grain: one row per model.
create or replace temp table ingest_model_state as
select m.mid, s.model is not null as model_stored
from ingest_models as m
left join models as s on s.model = m.model
