-- Outcomes that arrived before their decision (uniroute/ingest/outcomes.py): they wait here and are matched, the
-- first for each decision_id, when the decision lands (uniroute/ingest/decisions.py), within a window of days.
-- Append-only: a matched row stays, the outcome it gave is in `outcomes`.

-- Grain: one row per outcome row of a file whose decision_id was not a stored decision when it was ingested.
create table if not exists pending_outcomes (
    decision_id   varchar not null,
    score         double not null check (score >= 0 and score <= 1),
    cost          double check (cost >= 0),
    input_tokens  bigint check (input_tokens >= 0),
    output_tokens bigint check (output_tokens >= 0),
    row_number    bigint not null,     -- in its file
    source_file   varchar not null,
    file_hash     varchar not null,
    received_at   timestamp not null
);
