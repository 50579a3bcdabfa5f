"""The router's MLflow model, logged from code: MLflow runs this file to build the model at load time.

Nothing is pickled: the model is this code plus its artifacts (the router and, for a fitted embedder, the
embedder as npz arrays; a JSON header; validation embeddings for budgets). See pyfunc.py for what it does.
"""

import mlflow

from uniroute.pipeline.tracking.pyfunc import router_model_class

mlflow.models.set_model(router_model_class()())
