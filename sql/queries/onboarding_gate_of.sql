-- The evidence gate's rows of one onboarding version (pipeline/pool/evidence_gate.py), for its artifact: one row per
-- (model, cluster), provisional cells first.
select model, cluster, answers, round(error, 4) as error, round(error_lo, 4) as error_lo,
       round(error_hi, 4) as error_hi, winner_without, winner_with, provisional, round(routing_error, 4)
       as routing_error, wins_on_bound, answers_needed, len(next_prompts) as next_prompts
from onboarding_gate
where router_id = $router_id
order by model, provisional desc, cluster
