-- The models an already ingested file content gave results for (what onboarding that file again concerns).
select distinct model from results where file_hash = $file_hash order by model
