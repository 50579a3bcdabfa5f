-- Models currently in the pool.
select model, default_cost from models where status = 'active' order by model
