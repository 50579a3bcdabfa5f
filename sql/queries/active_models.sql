-- Models currently in the pool.
select model, default_cost from priced_models where status = 'active' order by model
