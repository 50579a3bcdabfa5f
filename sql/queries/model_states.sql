-- Every model name with its status (active or retired).
select model, status from models order by model
