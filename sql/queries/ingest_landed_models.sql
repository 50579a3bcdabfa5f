-- Models that receive new results on validation prompts or prompts of unknown split: the models whose
-- validation results have landed (an onboarding trigger). A retired model's results are stored but never land:
-- they must not bring it back into the pool (`uniroute onboard --reactivate` does that, on purpose).
-- Needs ingest_accepted_models, ingest_models.
select m.model
from ingest_accepted_models as a
join ingest_models as m on m.mid = a.mid
left join models as s on s.model = m.model
where a.landed and coalesce(s.status, 'active') = 'active'
order by m.model
