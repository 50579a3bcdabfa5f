"""MLflow lineage: the only room that imports mlflow, always inside functions and after the offline switches.

MLflow is derived from the store (`sync`: every router version and publication the store records is logged
once, and the aliases `champion` / `challenger` follow the store's decisions); the router is a registered
pyfunc model logged from code (`model`, `router_model`), whose serve-time behaviour lives in `pyfunc`; `client`
holds the tracking store, experiment, versions and aliases. The tracking store is the SQLite URI of
Settings.mlflow_uri; run and model artifacts live under the experiment's artifact_location.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from uniroute.lazy import lazy_attributes

if TYPE_CHECKING:
    from uniroute.pipeline.tracking.client import (
        CHALLENGER,
        CHAMPION,
        EXPERIMENT,
        REGISTERED_NAME,
        champion_version,
    )
    from uniroute.pipeline.tracking.model import compact_val, load_router_model
    from uniroute.pipeline.tracking.pyfunc import pool_of, prompts_of
    from uniroute.pipeline.tracking.sync import SyncReport, mlflow_champion_router, sync_mlflow

# Each name is imported from its module when first asked for: a command that only names the experiment (the line
# `uniroute onboard` prints about its MLflow follow-up) does not import the pyfunc, the routing and the sync.
_MODULE_OF = {
    "CHALLENGER": "client", "CHAMPION": "client", "EXPERIMENT": "client", "REGISTERED_NAME": "client",
    "champion_version": "client", "compact_val": "model", "load_router_model": "model", "pool_of": "pyfunc",
    "prompts_of": "pyfunc", "SyncReport": "sync", "mlflow_champion_router": "sync", "sync_mlflow": "sync",
}


__getattr__ = lazy_attributes(globals(), _MODULE_OF)


__all__ = [
    "CHALLENGER",
    "CHAMPION",
    "EXPERIMENT",
    "REGISTERED_NAME",
    "SyncReport",
    "champion_version",
    "compact_val",
    "load_router_model",
    "mlflow_champion_router",
    "pool_of",
    "prompts_of",
    "sync_mlflow",
]
