-- Every publication the store records as logged to MLflow, with its run.
select version, run_id from publication_mlflow order by version
