-- A decisions file's records whose decision_id is stored with other content (another router, model, prompt hash
-- or time): quarantined, the stored record stands. Needs decisions_staged (uniroute/ingest/decisions.py).
select s.line_number, s.decision_id
from decisions_staged as s
join decisions as d on d.decision_id = s.decision_id
where d.router_id <> s.router_id or d.model <> s.model or d.text_hash <> s.text_hash or d.decided_at <> s.decided_at
order by s.line_number
