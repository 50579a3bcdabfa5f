-- Decision records that could not be stored (uniroute/ingest/decision_checks.py says why): the good records of
-- their file were loaded. Append-only, like the benchmark logs' quarantine.

-- Grain: one row per rejected line of a decisions file (file_hash, line_number), with the reason.
create table if not exists decision_quarantine (
    file_hash      varchar not null,
    path           varchar not null,
    line_number    bigint not null,    -- 1-based line of the file
    decision_id    varchar,            -- when the line gave one as text
    reason         varchar not null,   -- the first field that failed its check, and its value
    raw            varchar,            -- the line's start, without its embedding or prompt
    quarantined_at timestamp not null
);
