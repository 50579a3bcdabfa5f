-- The distinct text hashes of the training prompts (their stored split) a build reads (build_prompts: a result of
-- an active, costed model): what K-means on the embedding dataset keeps of each partition (pipeline/build/clusters.py).
select distinct p.text_hash
from prompts as p
join prompt_splits as s on s.prompt_id = p.prompt_id
where s.split = 'train'
  and p.prompt_id in (select prompt_id from build_prompt_ids)
