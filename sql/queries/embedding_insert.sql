-- Add new vectors to the cache; a (text_hash, embedder_id) already present is left as it is.
-- Needs a registered relation `new_embeddings(text_hash varchar, vector float[])` with unique hashes.
insert into embeddings (text_hash, embedder_id, dim, vector, created_at)
select n.text_hash, $embedder_id, $dim, n.vector, now()::timestamp
from new_embeddings as n
where not exists (
    select 1 from embeddings as e
    where e.text_hash = n.text_hash and e.embedder_id = $embedder_id
)
