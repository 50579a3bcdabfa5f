-- The models an already ingested file content gave results or battles for (what onboarding that file again
-- concerns).
select model from results where file_hash = $file_hash
union
select model_a from battles where file_hash = $file_hash
union
select model_b from battles where file_hash = $file_hash
order by model
