-- The distinct texts of the prompts a build reads (those of build_prompts: a result of an active, costed model)
-- that have no vector of this embedder in the dataset, in text-hash order (a rerun cuts the same partitions).
-- Streamed to the workers' work file by embed/fill.py: the driver never holds every text.
-- prompts.text_hash is sha256 of the text, the dataset's key. `embeddings`: the view over the Parquet dataset.
with costed as (
    select m.model
    from priced_models as m
    where m.status = 'active'
      and (m.default_cost is not null
           or exists (select 1 from results as r where r.model = m.model and r.cost is not null))
)
select p.text_hash, any_value(p.text) as text
from prompts as p
where p.prompt_id in (select r.prompt_id from results as r semi join costed as c on c.model = r.model)
  and not exists (
    select 1 from embeddings as e
    where e.text_hash = p.text_hash and e.embedder_id = $embedder_id
  )
group by p.text_hash
order by p.text_hash
