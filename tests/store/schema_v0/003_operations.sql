-- The operations log: every state-changing run of ingest, onboard, retire, build, publish, embed, reconcile.

-- Grain: one row per event of an operation run. 'started' is committed on its own before the run changes
-- anything, so a killed run leaves it behind; then exactly one of 'succeeded' (committed in the same
-- transaction as the run's changes), 'failed' (after its rollback) or 'interrupted' (written by the next run,
-- which can only start once the killed one is gone). Append-only.
create table if not exists operation_events (
    op_id   varchar not null,
    kind    varchar not null,
    event   varchar not null check (event in ('started', 'succeeded', 'failed', 'interrupted')),
    happened_at timestamp not null,
    pid     integer not null,
    inputs  varchar,                    -- a fingerprint of what the run was given (file hashes, model names)
    detail  varchar                     -- the result summary, or the one-line error
);

-- Grain: one row per operation run: when it started and finished, and how it ended ('running' while it runs).
create or replace view operations as
select s.op_id, s.kind, coalesce(e.event, 'running') as status, s.happened_at as started, e.happened_at as finished,
       s.pid, s.inputs, e.detail
from operation_events as s
left join operation_events as e on e.op_id = s.op_id and e.event <> 'started'
where s.event = 'started';
