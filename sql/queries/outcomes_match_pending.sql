-- Outcomes that waited for their decision, now stored: the first received for each decision_id lands (as the first
-- outcome given for a decision stands), if it arrived at or after $since (older ones wait no more).
insert into outcomes
select p.decision_id, p.score, p.cost, p.input_tokens, p.output_tokens, p.source_file, p.file_hash, $now
from (
    select *, row_number() over (partition by decision_id order by received_at, file_hash, row_number) as rank
    from pending_outcomes
    where received_at >= $since
) as p
join decisions as d on d.decision_id = p.decision_id
where p.rank = 1 and p.decision_id not in (select decision_id from outcomes)
