-- The distinct texts of the prompts a build reads (those of build_prompts: a result of an active, costed model)
-- that have no vector of this embedder in the dataset: one prompt per text (the lowest prompt_id), with its text.
-- Streamed to the workers' work file by embed/fill.py: the driver never holds every text. The de-duplication
-- groups hashes and ids only and nothing sorts the texts, so DuckDB streams them too (grouping or ordering the
-- texts held all of them in its memory: 400 MB at 200k prompts, benchmarks/scale/dask_plane.py).
-- prompts.text_hash is sha256 of the text, the dataset's key. `embeddings`: the view over the Parquet dataset.
with firsts as (
    select min(p.prompt_id) as prompt_id
    from prompts as p
    where p.prompt_id in (select prompt_id from build_prompt_ids)
      and not exists (
        select 1 from embeddings as e
        where e.text_hash = p.text_hash and e.embedder_id = $embedder_id
      )
    group by p.text_hash
)
select p.text_hash, p.text
from prompts as p
semi join firsts as f on f.prompt_id = p.prompt_id
