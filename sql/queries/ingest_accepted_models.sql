-- The models that receive new results from the file, and whether any of them is on a validation prompt or
-- a prompt of unknown split (the model's validation results have landed: an onboarding trigger).
-- Needs ingest_accepted, ingest_prompt_state. Grain: one row per model.
create or replace temp table ingest_accepted_models as
select
    a.mid,
    count(*) as results,
    bool_or(ps.effective_split is null or ps.effective_split = 'val') as landed
from ingest_accepted as a
join ingest_prompt_state as ps on ps.pid = a.pid
group by a.mid
