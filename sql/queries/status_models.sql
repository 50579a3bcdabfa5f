-- Every model with its status (active or retired), for `uniroute status`.
select model, status from models order by model
