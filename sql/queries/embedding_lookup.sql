-- Cached vectors for the staged positions (embedding_stage_wanted), one row per input position that has one.
select w.pos, e.vector
from embedding_wanted as w
join embeddings as e on e.text_hash = w.text_hash
where e.embedder_id = $embedder_id
