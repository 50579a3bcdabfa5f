-- Every model name in the store.
select model from models order by model
