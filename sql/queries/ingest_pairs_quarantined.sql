-- Every quarantined battle of the file with its reason: the rows rejected within the file (ingest_rejects,
-- registered by uniroute.ingest) and the candidates that conflict with the store (ingest_pair_exceptions).
-- Grain: one row per rejected input row. (format() returns null if any argument is null: nullable values are
-- coalesced.)
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
            else format(
                'the battle ({}, {} vs {}) conflicts with the stored one from {}: {} there, {} here',
                to_json(p.prompt_id), to_json(a.model), to_json(b.model), e.stored_source,
                case e.stored_winner
                    when 'model_a' then format('{} won', to_json(e.stored_model_a))
                    when 'model_b' then format('{} won', to_json(e.stored_model_b))
                    else coalesce(e.stored_winner, format('preference {} for {}',
                                  cast(e.stored_preference as varchar), to_json(e.stored_model_a)))
                end,
                case c.winner
                    when 'model_a' then format('{} won', to_json(a.model))
                    when 'model_b' then format('{} won', to_json(b.model))
                    else coalesce(c.winner, format('preference {} for {}', cast(c.preference as varchar),
                                                   to_json(a.model)))
                end)
        end as reason,
        cast(to_json({
            'prompt_id': p.prompt_id, 'model_a': a.model, 'model_b': b.model, 'winner': c.winner,
            'preference': c.preference, 'split': p.split
        }) as varchar) as raw
    from ingest_pair_exceptions as e
    join ingest_pair_candidates as c on c.row_number = e.row_number
    join ingest_prompts as p on p.pid = e.pid
    join ingest_models as a on a.mid = e.aid
    join ingest_models as b on b.mid = e.bid
    join ingest_prompt_state as ps on ps.pid = e.pid
    where e.status = 'quarantine'
)
select row_number, reason, raw from ingest_rejects
union all
select row_number, reason, raw from conflicts
