-- Cached vectors of the wanted hashes for one embedder.
-- Needs a registered relation `wanted_hashes(text_hash varchar)` (unique hashes).
select e.text_hash, e.vector
from embeddings as e
semi join wanted_hashes as w on e.text_hash = w.text_hash
where e.embedder_id = $embedder_id
