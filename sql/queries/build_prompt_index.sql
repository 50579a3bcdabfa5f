-- The rows of the build matrices without their text (build_prompts' rows, in the same prompt_id order): the
-- prompt's id, its text hash (the embedding dataset's key) and its stored split. A build holds these for every
-- prompt; the texts only where it embeds or fits an embedder (pipeline/build_data.py).
with costed as (
    select m.model
    from priced_models as m
    where m.status = 'active'
      and (m.default_cost is not null
           or exists (select 1 from results as r where r.model = m.model and r.cost is not null))
)
select p.prompt_id, p.text_hash, s.split
from prompts as p
left join prompt_splits as s on s.prompt_id = p.prompt_id  -- splits are assigned before a build reads them
where p.prompt_id in (select r.prompt_id from results as r semi join costed as c on c.model = r.model)
order by p.prompt_id
