-- Every prompt with its text hash and its (fixed) split.
select p.prompt_id, p.text_hash, s.split
from prompts as p
join prompt_splits as s on s.prompt_id = p.prompt_id
