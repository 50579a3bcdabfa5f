-- Embedding cache: a prompt text is embedded once per embedder, ever.

-- Not a table of the store file since schema version 5 (sql/migrations/005_embeddings_to_parquet.sql): the vectors
-- are a partitioned Parquet dataset that the Dask workers write, one file per task, under UNIROUTE_EMBEDDINGS_URL
-- or `embeddings/` beside the store (uniroute/store/embeddings.py). Every connection shows it as the temporary
-- view `embeddings`:
--   grain: one row per (text_hash, embedder_id); text_hash is the sha256 hex of the prompt text (prompts.text_hash),
--   embedder_id the embedder's name, version and dimension, dim the vector's length, vector FLOAT[] L2-normalised,
--   created_at when a worker wrote it.
