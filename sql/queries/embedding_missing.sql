-- Staged positions without a cached vector, each with the first position holding the same text (which is
-- the one that gets embedded; the repeats copy its vector). `embeddings`: the view over the Parquet dataset.
select w.pos, w.text_hash, min(w.pos) over (partition by w.text_hash) as first_pos
from embedding_wanted as w
where not exists (
    select 1 from embeddings as e
    where e.text_hash = w.text_hash and e.embedder_id = $embedder_id
)
order by w.pos
