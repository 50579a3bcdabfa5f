-- Append one event of an operation run.
insert into operation_events (op_id, kind, event, happened_at, pid, inputs, detail)
values ($op_id, $kind, $event, $at, $pid, $inputs, $detail)
