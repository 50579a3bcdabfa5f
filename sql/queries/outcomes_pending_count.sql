-- Outcomes still waiting for their decision: received at or after $since, their decision not stored.
select count(*) as waiting
from pending_outcomes as p
where p.received_at >= $since and p.decision_id not in (select decision_id from decisions)
