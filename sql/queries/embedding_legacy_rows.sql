-- The cached vectors of a store before version 5, renamed by sql/migrations/005 and moved to the Parquet dataset by
-- store.embeddings.export_legacy; in a fixed order so a rerun after a kill writes the same files.
select text_hash, embedder_id, dim, vector, created_at
from embeddings_unexported
order by embedder_id, text_hash
