-- Each outcome of a file against the store: new, stored already with the same score, for an unknown decision, or
-- for a decision stored with another score. Needs outcomes_staged(row_number, decision_id, score, cost,
-- input_tokens, output_tokens) from outcomes_read_staged.sql (ids unique within the file).
-- Grain: one row per outcome of the file.
create or replace temp table outcomes_state as
select s.*,
       case when d.decision_id is null then 'unknown'
            when o.decision_id is null then 'new'
            when o.score = s.score then 'stored'
            else 'conflict' end as state,
       o.score as stored_score
from outcomes_staged as s
left join decisions as d on d.decision_id = s.decision_id
left join outcomes as o on o.decision_id = s.decision_id
