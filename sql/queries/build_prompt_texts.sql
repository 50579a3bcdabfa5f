-- Texts of the prompts with a result of an active model: what a build embeds (cached ones are skipped).
select distinct p.prompt_id, p.text
from prompts as p
join results as r on r.prompt_id = p.prompt_id
join models as m on m.model = r.model and m.status = 'active'
order by p.prompt_id
