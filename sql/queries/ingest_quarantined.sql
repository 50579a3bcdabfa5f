-- Every quarantined input row of the file with all its reasons: the rows rejected within the file
-- (ingest_rejects(row_number, reason, raw), registered by uniroute.ingest) and the candidates that conflict
-- with the store (ingest_exceptions). Grain: one row per rejected input row.
-- (format() returns null if any argument is null: nullable values are coalesced.)
create or replace temp table ingest_quarantined as
with conflicts as (
    select
        e.row_number,
        case e.conflict
            when 'text' then format(
                'prompt_id {} is already stored with a different text (from {})',
                to_json(p.prompt_id), ps.stored_source)
            when 'split' then format(
                'prompt_id {} is stored with split {} but this file says {}',
                to_json(p.prompt_id), to_json(ps.stored_split), to_json(p.split))
            when 'same_text' then format(
                'prompt_id {} has the same text as the stored prompt_id {}, '
                || 'which model {} scored {} (from {}); {} here',
                to_json(p.prompt_id), to_json(e.other_prompt_id), to_json(m.model),
                cast(e.stored_score as varchar), e.stored_result_source, cast(e.score as varchar))
            else format(
                '({}, {}) conflicts with the stored result from {}: {} stored, {} here',
                to_json(p.prompt_id), to_json(m.model), e.stored_result_source,
                'score ' || cast(e.stored_score as varchar)
                    || coalesce(' (published ' || cast(e.stored_raw_score as varchar) || ')', '')
                    || ' cost ' || coalesce(cast(e.stored_cost as varchar), 'null'),
                'score ' || cast(e.score as varchar)
                    || coalesce(' (published ' || cast(e.raw_score as varchar) || ')', '')
                    || ' cost ' || coalesce(cast(e.cost as varchar), 'null'))
        end as reason,
        cast(to_json({
            'prompt_id': p.prompt_id, 'model': m.model, 'score': coalesce(e.raw_score, e.score), 'cost': e.cost,
            'split': p.split
        }) as varchar) as raw
    from ingest_exceptions as e
    join ingest_prompts as p on p.pid = e.pid
    join ingest_models as m on m.mid = e.mid
    join ingest_prompt_state as ps on ps.pid = e.pid
    where e.status = 'quarantine'
),
everything as (
    select row_number, reason, raw from ingest_rejects
    union all
    select row_number, reason, raw from conflicts
)
-- distinct: a problem of a whole input row (e.g. an unreadable prompt) is found once per model on it
select row_number, string_agg(distinct reason, '; ' order by reason) as reason, min(raw) as raw
from everything
group by row_number
