-- The prices in force today of the named models: what a router version's costs came from (pipeline.prices).
select model, valid_from, input_per_mtok, output_per_mtok, per_call
from prices_in_force
where list_contains($models, model)
order by model
