"""MLflow lineage: the only room that imports mlflow, always inside functions and after the offline switches.

One run per build, onboarding and publish (`runs`); the router as a registered pyfunc model (`model`) whose
serve-time behaviour lives in `pyfunc`; the tracking store, experiment, versions and aliases (`client`). The
tracking store is the SQLite URI of Settings.mlflow_uri; run and model artifacts live under the experiment's
artifact_location.

Registry policy: every build registers a new version of one model. It takes the alias `champion` only if its
validation Area is not worse than the current champion's (stored as the `val_area` tag of each version);
otherwise it takes `challenger`. Onboarding derives from the champion (same clusters, one more Psi row), so
it always moves `champion`, recording the parent router.
"""

from uniroute.pipeline.tracking.client import (
    CHALLENGER,
    CHAMPION,
    EXPERIMENT,
    REGISTERED_NAME,
    RunRecord,
    champion_version,
)
from uniroute.pipeline.tracking.model import compact_val, load_router_model
from uniroute.pipeline.tracking.pyfunc import pool_of, prompts_of, routed_frame
from uniroute.pipeline.tracking.runs import log_build, log_onboard, log_publish, promotion_decision

__all__ = [
    "CHALLENGER",
    "CHAMPION",
    "EXPERIMENT",
    "REGISTERED_NAME",
    "RunRecord",
    "champion_version",
    "compact_val",
    "load_router_model",
    "log_build",
    "log_onboard",
    "log_publish",
    "pool_of",
    "prompts_of",
    "promotion_decision",
    "routed_frame",
]
