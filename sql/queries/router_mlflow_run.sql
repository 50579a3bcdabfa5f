-- The MLflow run a router version was logged as (once reconciliation has logged it). Grain: zero or one row.
select run_id, model_version from router_mlflow where router_id = $router_id
