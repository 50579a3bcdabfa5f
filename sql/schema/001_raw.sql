-- Raw benchmark logs as ingested. Append-only except models.status (retire) (models.default_cost is superseded by
-- prices).

-- Grain: one row per prompt (prompt_id is unique; the same text under two ids is two prompts).
create table if not exists prompts (
    prompt_id   varchar primary key,
    text        varchar not null,
    text_hash   varchar not null,      -- sha256 hex of text: the embedding cache key
    benchmark   varchar,
    split       varchar check (split in ('train', 'val', 'test')),  -- null: not said by the logs
    source_file varchar not null,
    first_seen  timestamp not null
);

-- Grain: one row per LLM.
create table if not exists models (
    model        varchar primary key,
    default_cost double check (default_cost >= 0),  -- superseded by prices (014_prices.sql): neither read nor written
    status       varchar not null default 'active' check (status in ('active', 'retired')),
    first_seen   timestamp not null
);

-- Grain: one row per (prompt_id, model). Uniqueness is enforced by ingestion's anti-join rather
-- than an index, which keeps bulk loads of millions of rows fast.
create table if not exists results (
    prompt_id   varchar not null,
    model       varchar not null,
    score       double not null check (score >= 0 and score <= 1),
    cost        double check (cost >= 0),
    raw_score   double,                -- the score as published, where ingestion derived `score` from it
    source_file varchar not null,
    file_hash   varchar not null,
    ingested_at timestamp not null
);

-- Grain: one row per ingested file content (sha256 of the bytes); a second copy is skipped.
create table if not exists ingested_files (
    file_hash         varchar primary key,
    path              varchar not null,
    format            varchar not null,
    rows_accepted     bigint not null,
    rows_quarantined  bigint not null,
    new_prompts       bigint not null,
    new_models        bigint not null,
    ingested_at       timestamp not null
);

-- Grain: one row per rejected input row (file_hash, row_number), with the reason.
create table if not exists quarantine (
    file_hash      varchar not null,
    path           varchar not null,
    row_number     bigint not null,    -- 1-based data row (header excluded; JSON: list index + 1)
    reason         varchar not null,
    raw            varchar,
    quarantined_at timestamp not null
);
