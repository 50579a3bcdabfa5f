-- The file's candidate battles that are NOT new: status 'stored' (the same battle, prompt and unordered pair,
-- is stored with the same outcome: skipped, never duplicated) or 'quarantine' with the conflict ('text' or
-- 'split': the prompt is stored otherwise; 'battle': the battle is stored with another outcome). Outcomes are
-- compared oriented to the pair's first model by name, so (a, b, 1) and (b, a, 0) are the same battle.
-- Needs ingest_pair_candidates(row_number, pid, aid, bid, preference, winner), ingest_prompts, ingest_models
-- (registered by uniroute.ingest) and ingest_prompt_state. Grain: one row per candidate that is not new.
create or replace temp table ingest_pair_exceptions as
with candidates as (
    select c.*, p.prompt_id,
           least(a.model, b.model) as low, greatest(a.model, b.model) as high,
           case when a.model <= b.model then c.preference else 1 - c.preference end as oriented
    from ingest_pair_candidates as c
    join ingest_prompts as p on p.pid = c.pid
    join ingest_models as a on a.mid = c.aid
    join ingest_models as b on b.mid = c.bid
),
stored as (
    select s.prompt_id, least(s.model_a, s.model_b) as low, greatest(s.model_a, s.model_b) as high,
           case when s.model_a <= s.model_b then s.preference else 1 - s.preference end as oriented,
           s.model_a, s.model_b, s.winner, s.preference, s.source_file
    from battles as s
    semi join ingest_prompts as p on p.prompt_id = s.prompt_id
),
compared as (
    -- only prompts already stored can clash or hold stored battles
    select c.*, ps.text_differs, ps.split_clash,
           coalesce(s.oriented = c.oriented, false) as battle_same,
           s.model_a as stored_model_a, s.model_b as stored_model_b, s.winner as stored_winner,
           s.preference as stored_preference,
           s.source_file as stored_source
    from candidates as c
    join ingest_prompt_state as ps on ps.pid = c.pid and ps.prompt_stored
    left join stored as s on s.prompt_id = c.prompt_id and s.low = c.low and s.high = c.high
    where ps.text_differs or ps.split_clash or s.prompt_id is not null
)
select
    row_number, pid, aid, bid,
    case when not (text_differs or split_clash) and battle_same then 'stored' else 'quarantine' end as status,
    case when text_differs then 'text' when split_clash then 'split' when not battle_same then 'battle' end
        as conflict,
    stored_model_a, stored_model_b, stored_winner, stored_preference, stored_source
from compared
