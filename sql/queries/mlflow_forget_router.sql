-- A router version MLflow no longer holds (its tracking store was lost or replaced): logged again at the next sync.
delete from router_mlflow where router_id = $router_id
