-- Ingestion bookkeeping beyond the raw tables of 001.

-- Grain: one row per (key_kind, key): a format's own identifier of a stored prompt where the format splits
-- one prompt over several rows that may land in different files (RouterBench's sample_id). Ingestion looks
-- a later file's rows up here to merge them into the prompt already stored (uniroute/ingest.py says how).
create table if not exists prompt_keys (
    key_kind   varchar not null,
    key        varchar not null,
    prompt_id  varchar not null,
    file_hash  varchar not null,
    first_seen timestamp not null
);
