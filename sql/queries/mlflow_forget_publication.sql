-- A publication run MLflow no longer holds (its tracking store was lost or replaced): logged again at the next sync.
delete from publication_mlflow where version = $version
