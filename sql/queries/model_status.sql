-- Status of the named models.
select model, status, default_cost from priced_models where list_contains($models, model) order by model
