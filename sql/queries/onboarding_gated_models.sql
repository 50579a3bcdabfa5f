-- Which of the given models the evidence gate has judged before (newcomers onboarded since the gate exists): an
-- onboarding that finds their rows unchanged judges them again; a model the build measured is not a newcomer.
select distinct model from onboarding_gate where list_contains($models, model)
