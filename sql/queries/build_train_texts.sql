-- The texts of a build's training prompts (build_prompts' rows with split 'train', in prompt_id order): what a
-- fitted embedder (TF-IDF) is fitted on.
with costed as (
    select m.model
    from priced_models as m
    where m.status = 'active'
      and (m.default_cost is not null
           or exists (select 1 from results as r where r.model = m.model and r.cost is not null))
)
select p.text
from prompts as p
join prompt_splits as s on s.prompt_id = p.prompt_id
where s.split = 'train'
  and p.prompt_id in (select r.prompt_id from results as r semi join costed as c on c.model = r.model)
order by p.prompt_id
