-- Models that receive new results on validation prompts or prompts of unknown split: the models whose
-- validation results have landed (an onboarding trigger). Needs ingest_accepted_models, ingest_models.
select m.model
from ingest_accepted_models a
join ingest_models m on m.mid = a.mid
where a.landed
order by m.model
