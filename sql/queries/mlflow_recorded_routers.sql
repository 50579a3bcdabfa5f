-- Every router version the store records as registered in MLflow, with the model version it got.
select router_id, model_version from router_mlflow order by router_id
