-- Cached vectors of the registered (pos, text_hash) rows `wanted_hashes`, one row per position that has one: the
-- rows of the embedding dataset a build holds (its samples and validation prompts), looked up by the prompts'
-- stored hashes. A hash in two partition files (a rerun task rewrites its own file) still gives one row.
select w.pos, any_value(e.vector) as vector
from wanted_hashes as w
join embeddings as e on e.text_hash = w.text_hash
where e.embedder_id = $embedder_id
group by w.pos
