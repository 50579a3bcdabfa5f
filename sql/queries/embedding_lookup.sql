-- Cached vectors for the staged positions (embedding_stage_wanted), one row per input position that has one.
-- `embeddings` is the connection's view over the Parquet dataset (uniroute/store/embeddings.py); a hash written
-- twice (two runs racing past the store's lock cannot happen, a rerun task rewrites its own file) still gives one row.
select w.pos, any_value(e.vector) as vector
from embedding_wanted as w
join embeddings as e on e.text_hash = w.text_hash
where e.embedder_id = $embedder_id
group by w.pos
