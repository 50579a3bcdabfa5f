-- The validation evidence behind some models' Psi under one router. Grain: one row per (model, cluster).
select model, cluster, error, val_answers, cluster_val_prompts, coverage, uses_fallback
from model_evidence
where router_id = $router_id and list_contains($models, model)
order by model, cluster
