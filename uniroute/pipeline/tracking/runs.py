"""The three kinds of run: a build (registered as champion or challenger), an onboarding (moves champion) and a
publish (the published tables as artifacts)."""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from mlflow import MlflowClient

    from uniroute.routers.router import Router

from uniroute.pipeline.tracking.client import (
    CHALLENGER,
    CHAMPION,
    REGISTERED_NAME,
    RunRecord,
    alias_version,
    checked_artifacts,
    experiment_id_of,
    log_run_contents,
    model_versions,
    tag_version,
    tracking_store,
    version_summary,
)
from uniroute.pipeline.tracking.model import register_router

log = logging.getLogger(__name__)

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
    artifacts = checked_artifacts(artifacts)
    with tracking_store(tracking_uri) as client:
        import mlflow

        experiment_id = experiment_id_of(client, artifact_root)
        current = alias_version(client, registered_name, CHAMPION)
        champion = None if current is None else version_summary(current)
        tags = {"kind": "build", "router_id": router_id, "embedder": embedder_name}
        with mlflow.start_run(experiment_id=experiment_id, run_name=f"build {router_id}", tags=tags) as run:
            log_run_contents(params, metrics, artifacts)
            mlflow.log_metric("val_area", val_area)
            version = register_router(router, router_id, embedder_name, val_embeddings, registered_name)
            tag_version(client, registered_name, version,
                         {"kind": "build", "router_id": router_id, "val_area": repr(val_area)})
            # Not atomic with the read above: the pipeline is the registry's only writer (one build at a time).
            promoted, reason = promotion_decision(val_area, champion)
            alias = CHAMPION if promoted else CHALLENGER
            client.set_registered_model_alias(registered_name, alias, version)
            if promoted and alias_version(client, registered_name, CHALLENGER) is not None:
                # The old challenger lost to the previous champion, which this build matched or beat.
                client.delete_registered_model_alias(registered_name, CHALLENGER)
            mlflow.set_tags({"model_version": version, "alias": alias,
                             "promoted": str(promoted).lower(), "promotion_reason": reason})
    log.info("build run %s: router %s is version %s (%s): %s", run.info.run_id, router_id, version, alias, reason)
    return RunRecord(run_id=run.info.run_id, model_version=version, alias=alias, promoted=promoted, reason=reason)


def _version_of_router(client: MlflowClient, registered_name: str, router_id: str) -> Any | None:
    """The newest registered version whose router_id tag is router_id, or None."""
    matches = [v for v in model_versions(client, registered_name) if v.tags.get("router_id") == router_id]
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
    artifacts = checked_artifacts(artifacts)
    with tracking_store(tracking_uri) as client:
        import mlflow

        experiment_id = experiment_id_of(client, artifact_root)
        current = alias_version(client, registered_name, CHAMPION)
        champion = None if current is None else version_summary(current)
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
            log_run_contents(params, metrics, artifacts)
            if val_area is not None:
                mlflow.log_metric("val_area", val_area)
            version = register_router(router, router_id, embedder_name, val_embeddings, registered_name)
            tag_version(client, registered_name, version, {
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
    artifacts = checked_artifacts(artifacts)
    with tracking_store(tracking_uri) as client:
        import mlflow

        experiment_id = experiment_id_of(client, artifact_root)
        tags = {"kind": "publish", "router_id": router_id}
        with mlflow.start_run(experiment_id=experiment_id, run_name=f"publish {router_id}", tags=tags) as run:
            log_run_contents(params, {}, artifacts)
    return run.info.run_id
