-- Embedding cache: a prompt text is embedded once per embedder, ever.

-- Grain: one row per (text_hash, embedder_id). Keyed by the text's sha256 (prompts.text_hash), not by
-- prompt_id, so the same text under two ids, or in two datasets, is embedded once. Uniqueness is enforced
-- by the insert's anti-join (sql/queries/embedding_insert.sql) rather than an index, which keeps bulk
-- inserts of hundreds of thousands of vectors fast. Vectors are FLOAT[] lists (not FLOAT[dim] arrays)
-- because different embedders have different dimensions; `dim` records the length of each.
create table if not exists embeddings (
    text_hash   varchar not null,      -- sha256 hex of the prompt text
    embedder_id varchar not null,      -- name, version and dimension of the embedder (uniroute.embed)
    dim         integer not null check (dim > 0),
    vector      float[] not null,      -- L2-normalised, length dim
    created_at  timestamp not null
);
