-- Status of the named models.
select model, status, default_cost from models where list_contains($models, model) order by model
