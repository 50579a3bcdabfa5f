-- Models taken out of the pool.
select model from models where status = 'retired' order by model
