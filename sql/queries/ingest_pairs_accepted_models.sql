-- The models that receive new battles from the file, and whether any is on a validation prompt or a prompt of
-- unknown split (the model's validation evidence has landed: an onboarding trigger). The table
-- ingest_insert_models and ingest_landed_models read. Needs ingest_pairs_accepted, ingest_prompt_state.
-- Grain: one row per model.
create or replace temp table ingest_accepted_models as
with sides as (
    select pid, aid as mid from ingest_pairs_accepted
    union all
    select pid, bid as mid from ingest_pairs_accepted
)
select s.mid, count(*) as results, bool_or(ps.effective_split is null or ps.effective_split = 'val') as landed
from sides as s
join ingest_prompt_state as ps on ps.pid = s.pid
group by s.mid
