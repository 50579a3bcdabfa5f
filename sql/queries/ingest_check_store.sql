-- The file's candidate rows that are NOT new results: status 'stored' (identical to a stored result: skipped,
-- never duplicated) or 'quarantine' with the conflict ('text' or 'split': the prompt is stored otherwise;
-- 'result': the (prompt, model) is stored with another result; 'same_text': the same text is stored under
-- another prompt_id, where this model scored it differently). Every other candidate is accepted.
-- Needs ingest_candidates(row_number, pid, mid, score, cost, raw_score), ingest_prompts, ingest_models
-- (registered by uniroute.ingest) and ingest_prompt_state. Grain: one row per candidate that is not new.
create or replace temp table ingest_exceptions as
with stored_results as (
    select p.pid, m.mid, r.score, r.cost, r.raw_score, r.source_file
    from results as r
    join ingest_prompts as p on p.prompt_id = r.prompt_id
    join ingest_models as m on m.model = r.model
),
compared as (
    -- only prompts already stored can clash or have stored results: joining on them first keeps the
    -- usual case (new prompts) to a probe of an empty hash table
    select
        c.*,
        ps.text_differs or ps.split_clash as prompt_clash,
        ps.text_differs,
        r.pid is not null as result_stored,
        coalesce(r.score = c.score and r.cost is not distinct from c.cost
                 and r.raw_score is not distinct from c.raw_score, false) as result_same,
        r.score as stored_score,
        r.cost as stored_cost,
        r.raw_score as stored_raw_score,
        r.source_file as stored_result_source
    from ingest_candidates as c
    join ingest_prompt_state as ps on ps.pid = c.pid and ps.prompt_stored
    left join stored_results as r on r.pid = c.pid and r.mid = c.mid
    where ps.text_differs or ps.split_clash or r.pid is not null
),
same_text as (
    -- a new prompt whose text is stored under another id, on which the same model has a different score
    select c.row_number, c.pid, c.mid, c.score, c.cost, c.raw_score,
           'quarantine' as status, 'same_text' as conflict,
           r.score as stored_score, r.cost as stored_cost, r.raw_score as stored_raw_score,
           r.source_file as stored_result_source, s.prompt_id as other_prompt_id
    from ingest_candidates as c
    join ingest_prompt_state as ps on ps.pid = c.pid and not ps.prompt_stored
    join ingest_prompts as p on p.pid = c.pid
    join prompts as s on s.text_hash = sha256(p.text) and s.prompt_id <> p.prompt_id
    join ingest_models as m on m.mid = c.mid
    join results as r on r.prompt_id = s.prompt_id and r.model = m.model and r.score <> c.score
    qualify row_number() over (partition by c.pid, c.mid order by s.prompt_id) = 1
)
select
    row_number, pid, mid, score, cost, raw_score,
    case when not prompt_clash and result_same then 'stored' else 'quarantine' end as status,
    case
        when prompt_clash and text_differs then 'text'
        when prompt_clash then 'split'
        when not result_same then 'result'
    end as conflict,
    stored_score, stored_cost, stored_raw_score, stored_result_source, null::varchar as other_prompt_id
from compared
union all
select * from same_text
