"""MLflow, derived from the store: every router version and publication the store records, logged once.

The store decides; MLflow follows. `sync_mlflow` (run in a store session, by reconciliation) logs each router
version the store has not yet seen registered (one run, registered as a new version of `uniroute-router`, its
store id in the `router_id` tag), each publication as a run, then points the alias `champion` at the store's
champion and `challenger` at a newer build the store did not promote. A version registered by a run that was
killed before the store recorded it is found again by its `router_id` tag and adopted, never logged twice.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

import numpy as np
import pandas as pd

from uniroute import store
from uniroute.faults import crashpoint, disk_full
from uniroute.pipeline.pool import registry
from uniroute.pipeline.tracking.client import (
    CHALLENGER,
    CHAMPION,
    REGISTERED_NAME,
    alias_version,
    experiment_id_of,
    log_run_contents,
    model_versions,
    tracking_store,
)
from uniroute.pipeline.tracking.curve_png import plot_build_curves
from uniroute.pipeline.tracking.empty_store import seed_tracking_store
from uniroute.pipeline.tracking.model import register_router
from uniroute.pipeline.tracking.relocate import relocate_tracking_store
from uniroute.routers.tables import routing_tables, validation_proxy, validation_weights

if TYPE_CHECKING:
    from mlflow import MlflowClient

log = logging.getLogger(__name__)


@dataclass
class SyncReport:
    """What a sync changed in MLflow."""

    registered: list[str] = field(default_factory=list)  # router ids logged and registered
    adopted: list[str] = field(default_factory=list)  # router ids found registered already
    publications: list[str] = field(default_factory=list)  # versions logged as runs
    aliases: dict[str, str] = field(default_factory=dict)  # alias -> model version it was moved to
    forgotten: list[str] = field(default_factory=list)  # router ids and publications MLflow had lost
    relocated: str | None = None  # the home moved: the line saying where the artifact URIs now point

    def lines(self) -> list[str]:
        out = [self.relocated] if self.relocated else []
        out += [f"MLflow had lost {len(self.forgotten)} router versions and publications the store recorded: "
               "logged again"] if self.forgotten else []
        out += [f"registered router {r} in MLflow" for r in self.registered]
        out += [f"adopted MLflow's registered version of router {r}" for r in self.adopted]
        out += [f"logged publication {v} to MLflow" for v in self.publications]
        out += [f"MLflow alias {a} -> version {v}" for a, v in self.aliases.items()]
        return out


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def _build_artifacts(con: store.Connection, version: registry.RouterVersion, candidates: pd.DataFrame,
                     folder: Path) -> dict[str, Path]:
    """Files describing a router version, rebuilt from the store: Psi, curves (CSV and PNG), the candidates a
    build compared, routing table."""

    router = version.router
    artifacts = {"psi.csv": folder / "psi.csv"}
    registry.psi_table(router).to_csv(artifacts["psi.csv"], index=False)
    curves = store.query(con, "router_curves_of", router_id=version.router_id)
    if len(curves):
        artifacts["deferral_curves.csv"] = folder / "deferral_curves.csv"
        artifacts["deferral_curves.png"] = folder / "deferral_curves.png"
        curves.to_csv(artifacts["deferral_curves.csv"], index=False)
        plot_build_curves(curves, artifacts["deferral_curves.png"], version.router_id)
    if len(candidates):  # the kinds this build compared and the one it chose (evaluation.selection)
        artifacts["candidates.csv"] = folder / "candidates.csv"
        candidates.to_csv(artifacts["candidates.csv"], index=False)
    if router.one_hot:
        artifacts["centroids.npy"] = folder / "centroids.npy"
        np.save(artifacts["centroids.npy"], router.psi_centroids().centers)  # type: ignore[union-attr]  # one-hot
        tables = routing_tables(router, router.models, validation_weights(router))
        artifacts["routing_table.csv"] = folder / "routing_table.csv"
        tables.routes.merge(tables.budgets, on=["grid", "budget", "lam"]).to_csv(artifacts["routing_table.csv"],
                                                                                 index=False)
    return artifacts


@contextmanager
def _run_or_nothing(**start: Any) -> Iterator[Any]:
    """An MLflow run whose artifacts are removed when its body fails (start_run's exit marks it FAILED).

    A full disk mid-run left a 43 MB artifact folder no version pointed at and the space still taken; the next
    sync logs the version again in a new run, so nothing of the failed one is worth keeping.
    """
    import mlflow

    with mlflow.start_run(**start) as run:
        try:
            yield run
        except BaseException:
            uri = urlparse(mlflow.get_artifact_uri())
            if uri.scheme in ("file", ""):
                shutil.rmtree(unquote(uri.path), ignore_errors=True)
            raise


def _log_router(client: MlflowClient, con: store.Connection, row: pd.Series, experiment_id: str,
                registered_name: str) -> tuple[str, str]:
    """One run for a router version, the router registered as a new model version: (run id, version)."""
    import mlflow


    version = registry.load_router_version(con, row.router_id)
    router = version.router
    metrics = store.query(con, "router_metrics_of", router_id=row.router_id)
    flat = {f"{m}_{name}": float(v) for m, name, v in metrics.itertuples(index=False) if v is not None
            and np.isfinite(v)}
    if version.val_area is not None:
        flat["val_area"] = version.val_area
    candidates = store.query(con, "router_candidates_of", router_id=row.router_id)
    for c in candidates.itertuples(index=False):
        for name in ("val_area", "val_area_se", "diff_to_default", "p_best"):
            value = getattr(c, name)
            if value is not None and np.isfinite(value):
                flat[f"candidate_{c.kind}_{name}"] = float(value)
    gate = store.query(con, "shadow_gate_of", router_id=row.router_id)
    for g in gate.itertuples(index=False):  # the shadow gate on recent traffic (pipeline/traffic/shadow_gate.py)
        for name in ("n_decisions", "spend", "champion_score", "challenger_score", "difference", "difference_se",
                     "p_worse"):
            value = getattr(g, name)
            if value is not None and np.isfinite(value):
                flat[f"shadow_{name}"] = float(value)
    tags = {"kind": row.origin, "router_id": row.router_id, "router_kind": row.kind,
            "embedder_id": router.embedder_id}
    if version.parent_id:
        tags["parent_router_id"] = version.parent_id
    with tempfile.TemporaryDirectory(prefix="uniroute-run-") as tmp, _run_or_nothing(
        experiment_id=experiment_id, run_name=f"{row.origin} {row.router_id}", tags=tags
    ) as run:
        params = {"k": router.k, "embedder_id": router.embedder_id, "pool": ",".join(router.models),
                  "data_fingerprint": row.data_fingerprint, "router_kind": row.kind, "reason": row.reason}
        for g in gate.itertuples(index=False):
            params.update({"shadow_verdict": g.verdict, "shadow_test": g.test,
                           "shadow_champion_id": g.champion_id or "", "shadow_window_days": g.window_days})
        if len(candidates):
            params["candidate_kinds"] = ",".join(sorted(candidates.kind))
            params["default_kind"] = str(candidates.default_kind.iloc[0])
        log_run_contents(params, flat, _build_artifacts(con, version, candidates, Path(tmp)))
        disk_full("mlflow:artifacts", mlflow.get_artifact_uri())
        version_tags = {
            "router_id": row.router_id, "kind": row.origin, "router_kind": row.kind,
            "embedder_id": router.embedder_id, "data_fingerprint": row.data_fingerprint,
            "val_area": None if version.val_area is None else repr(version.val_area),
            "parent_router_id": version.parent_id, "price_snapshot": version.price_snapshot,
        }
        number = register_router(
            router, row.router_id, registry.embedder_name(router.embedder_id), version.embedder_state,
            # The stand-in for validation prompts that `uniroute route --budget` uses, so the served model turns
            # a budget into the same lambda (one-hot routers).
            validation_proxy(router) if router.one_hot else None, registered_name,
            tags={k: str(v) for k, v in version_tags.items() if v is not None}, price_snapshot=version.price_snapshot,
        )
        mlflow.set_tags({"model_version": number})
    return run.info.run_id, number


def _log_publication(row: pd.Series, experiment_id: str, published_dir: Path | None) -> str:
    """One run for a publication, its snapshot files as artifacts; the run id."""
    # The folder is found by version under this home's published/: the recorded path names where it was written,
    # which a copied or moved home no longer is.
    path = Path(published_dir) / row.version if published_dir is not None else Path(row.path)
    files = {p.name: p for p in sorted(path.iterdir())} if path.is_dir() else {}
    with _run_or_nothing(experiment_id=experiment_id, run_name=f"publish {row.version}",
                         tags={"kind": "publish", "router_id": row.router_id, "version": row.version}) as run:
        log_run_contents({"version": row.version, "pool": ",".join(row.pool), "fingerprint": row.fingerprint}, {},
                         files)
    return run.info.run_id


def _set_alias(client: MlflowClient, registered_name: str, alias: str, version: str | None, report: SyncReport) -> None:
    current = alias_version(client, registered_name, alias)
    if version is None:
        if current is not None:
            client.delete_registered_model_alias(registered_name, alias)
            report.aliases[alias] = "(removed)"
        return
    if current is None or str(current.version) != version:
        client.set_registered_model_alias(registered_name, alias, version)
        report.aliases[alias] = version


def _forget_what_mlflow_lost(con: store.Connection, client: MlflowClient, experiment_id: str,
                             by_router: dict[str, Any], report: SyncReport) -> None:
    """Drop the store's records of versions and runs MLflow no longer holds, so this sync logs them again.

    A deleted or replaced mlflow.db leaves the store saying everything was logged; without this the champion
    alias would point at a model version that does not exist and every sync would fail.
    """
    recorded = store.query(con, "mlflow_recorded_routers")
    for row in recorded.itertuples(index=False):
        held = by_router.get(row.router_id)
        if held is None or str(held.version) != row.model_version:
            store.execute(con, "mlflow_forget_router", router_id=row.router_id)
            report.forgotten.append(row.router_id)
    runs = store.query(con, "mlflow_recorded_publications")
    if len(runs):
        held_runs = {r.info.run_id for r in client.search_runs(
            [experiment_id], filter_string="tags.kind = 'publish'", max_results=50000)}
        for row in runs.itertuples(index=False):
            if row.run_id not in held_runs:
                store.execute(con, "mlflow_forget_publication", version=row.version)
                report.forgotten.append(row.version)


def sync_mlflow(con: store.Connection, tracking_uri: str, artifact_root: Path,
                registered_name: str = REGISTERED_NAME, published_dir: Path | None = None) -> SyncReport:
    """Bring MLflow in line with the store (see the module docstring); record what was logged in the store."""
    seed_tracking_store(tracking_uri, artifact_root)
    report = SyncReport(relocated=relocate_tracking_store(tracking_uri, artifact_root))
    with tracking_store(tracking_uri) as client:
        experiment_id = experiment_id_of(client, artifact_root)
        by_router: dict[str, Any] = {}
        for v in model_versions(client, registered_name):
            rid = v.tags.get("router_id")
            if rid and (rid not in by_router or int(v.version) > int(by_router[rid].version)):
                by_router[rid] = v
        _forget_what_mlflow_lost(con, client, experiment_id, by_router, report)
        pending = store.query(con, "mlflow_pending_routers")
        publications = store.query(con, "mlflow_pending_publications")
        if len(pending):
            for row in pending.itertuples(index=False):
                found = by_router.get(row.router_id)
                if found is not None:
                    run_id, number = found.run_id, str(found.version)
                    report.adopted.append(row.router_id)
                else:
                    run_id, number = _log_router(client, con, pd.Series(row._asdict()), experiment_id,
                                                 registered_name)
                    report.registered.append(row.router_id)
                    crashpoint("mlflow:registered")
                store.write_frame(con, "router_mlflow", pd.DataFrame(
                    [{"router_id": row.router_id, "run_id": run_id, "model_version": number, "logged_at": _now()}]))
        for row in publications.itertuples(index=False):
            run_id = _log_publication(pd.Series(row._asdict()), experiment_id, published_dir)
            store.write_frame(con, "publication_mlflow", pd.DataFrame(
                [{"version": row.version, "run_id": run_id, "logged_at": _now()}]))
            report.publications.append(row.version)
        targets = store.query(con, "mlflow_alias_targets")
        wanted = dict(zip(targets.alias, targets.model_version, strict=True))
        _set_alias(client, registered_name, CHAMPION, wanted.get(CHAMPION), report)
        crashpoint("mlflow:champion-alias")
        _set_alias(client, registered_name, CHALLENGER, wanted.get(CHALLENGER), report)
    for line in report.lines():
        log.info(line)
    return report


def mlflow_champion_router(tracking_uri: str, registered_name: str = REGISTERED_NAME) -> str | None:
    """The store router id behind MLflow's champion alias, or None."""
    with tracking_store(tracking_uri) as client:
        version = alias_version(client, registered_name, CHAMPION)
        return None if version is None else version.tags.get("router_id")
