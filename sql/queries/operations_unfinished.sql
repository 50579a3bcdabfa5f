-- Runs that started and never ended: killed (the caller holds the writer lock, so none of them still runs).
select op_id, kind, pid, started from operations where status = 'running' order by started
