-- The rows of the first decision_id (by row) that a file gives two different scores; none when the file agrees
-- with itself. Needs outcomes_read.
-- Grain: one row per row of that decision_id.
with clashing as (
    select decision_id, min(row_number) as first_row
    from outcomes_read
    group by decision_id
    having count(distinct score) > 1
    order by first_row
    limit 1
)

select r.decision_id, r.row_number, r.score
from outcomes_read as r
inner join clashing as c on r.decision_id = c.decision_id
order by r.row_number
