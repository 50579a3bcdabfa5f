-- Onboarding brings a retired model back into the pool.
update models set status = 'active' where list_contains($models, model)
