"""The MLflow tracking store: a client pointed at the store's URI, the experiment, registered versions and
aliases, and what a run records (params, metrics, artifacts)."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from uniroute.pipeline.tracking.relocate import ForeignTrackingStore
from uniroute.settings import apply_offline_environment

if TYPE_CHECKING:
    from mlflow import MlflowClient


log = logging.getLogger(__name__)

EXPERIMENT = "uniroute"
REGISTERED_NAME = "uniroute-router"
CHAMPION = "champion"
CHALLENGER = "challenger"
LOGGED_MODEL_NAME = "router"


@contextlib.contextmanager
def tracking_store(tracking_uri: str | None) -> Iterator[MlflowClient]:
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
        mlflow.set_tracking_uri(uri_before)  # type: ignore[arg-type]  # None unsets it (MLflow handles None)
        if env_before is not None:
            os.environ["MLFLOW_TRACKING_URI"] = env_before


def experiment_id_of(client: MlflowClient, artifact_root: Path) -> str:
    """Id of the `uniroute` experiment, created with its artifacts under artifact_root (a store that moved with its
    home is rewritten first: relocate.relocate_tracking_store)."""
    location = Path(artifact_root).resolve().as_uri()
    experiment = client.get_experiment_by_name(EXPERIMENT)
    if experiment is None:
        Path(artifact_root).mkdir(parents=True, exist_ok=True)
        return client.create_experiment(EXPERIMENT, artifact_location=location)
    if experiment.artifact_location.rstrip("/") != location.rstrip("/"):
        raise ForeignTrackingStore(
            f"experiment {EXPERIMENT!r} keeps its artifacts at {experiment.artifact_location}, "
            f"not at the requested {location}: this tracking store belongs to another UNIROUTE_HOME"
        )
    return experiment.experiment_id


def model_versions(client: MlflowClient, registered_name: str) -> list[Any]:
    """Every version of registered_name (empty if the model is not registered yet)."""
    return list(client.search_model_versions(filter_string=f"name = '{registered_name}'"))


def alias_version(client: MlflowClient, registered_name: str, alias: str) -> Any | None:
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


def version_summary(version: Any) -> dict:
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
    with tracking_store(tracking_uri) as client:
        version = alias_version(client, registered_name, CHAMPION)
        return None if version is None else version_summary(version)


# ---- what a run records ---------------------------------------------------------------------------------


def _param_value(value: Any) -> str:
    """A parameter as MLflow stores it: sequences comma-joined, everything else str()."""
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def checked_artifacts(artifacts: Mapping[str, Path]) -> dict[str, Path]:
    """artifacts with every path checked to exist and every name to be a plain file name, before any run."""
    bad = [name for name in artifacts if not name or name in (".", "..") or "/" in name or "\\" in name]
    if bad:
        raise ValueError(f"artifact names must be plain file names (no folders): {bad}")
    missing = {name: str(path) for name, path in artifacts.items() if not Path(path).exists()}
    if missing:
        raise FileNotFoundError(f"artifacts to log do not exist: {missing}")
    return {name: Path(path) for name, path in artifacts.items()}


def log_run_contents(params: Mapping[str, Any], metrics: Mapping[str, float], artifacts: Mapping[str, Path]) -> None:
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


def tag_version(client: MlflowClient, registered_name: str, version: str, tags: Mapping[str, Any]) -> None:
    """Set each tag (None values skipped) on one model version."""
    for key, value in tags.items():
        if value is not None:
            client.set_model_version_tag(registered_name, version, key, str(value))
