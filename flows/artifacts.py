"""What a flow run leaves in the Prefect UI: its name says what it did, its artifacts show the results.

The Markdown and tables are built here from the library's result objects and the store's views (plain
functions, tested without Prefect); `report_*` hands them to Prefect. A report never fails the run whose
work is already done: a store another process holds is logged and the artifact skipped.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any
from uuid import UUID

import pandas as pd
from prefect import get_run_logger
from prefect.artifacts import (
    create_image_artifact,
    create_link_artifact,
    create_markdown_artifact,
    create_table_artifact,
)
from prefect.client.orchestration import get_client
from prefect.runtime import flow_run

from uniroute import store
from uniroute.frame_output import markdown_table
from uniroute.pipeline.build.tuned_kinds import TABLE_COLUMNS
from uniroute.pipeline.traffic.summary import traffic_day, traffic_markdown
from uniroute.settings import Settings

if TYPE_CHECKING:  # the result types only; importing the pipeline would slow the every-minute inbox flow
    from uniroute.ingest.inbox import InboxOutcome
    from uniroute.pipeline.build.nightly import BuildResult
    from uniroute.pipeline.pool.onboard import OnboardResult
    from uniroute.pipeline.serving.publish import PublishResult

METRICS = ("area", "area50", "qnc", "peak")


def rename_run(name: str) -> None:
    """Give the current flow run a name that says what it did (the UI lists runs by name)."""
    with get_client(sync_client=True) as client:
        client.update_flow_run(UUID(flow_run.id), name=name[:200])


def _number(value: float) -> float | str | None:
    """JSON-safe: inf as the string 'inf' (QNC never reached), NaN as None."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return "inf" if math.isinf(value) else round(float(value), 4)


def evaluation_rows(result: BuildResult) -> list[dict[str, Any]]:
    """One row per evaluated method: held-out Area, Area50, QNC and Peak, best Area first."""
    rows = [{"method": m, **{k: _number(values.get(k, math.nan)) for k in METRICS}}
            for m, values in result.metrics.items()]
    return sorted(rows, key=lambda r: -r["area"] if isinstance(r["area"], float) else 0.0)


def candidate_rows(result: BuildResult) -> list[dict[str, Any]]:
    """One row per router kind the build compared: hyper-parameters, validation Area +/- SE, P(best), chosen."""
    rows = []
    for c in result.candidates_table().to_dict("records"):
        rows.append({k: (_number(c[k]) if isinstance(c.get(k), float) else c.get(k)) for k in TABLE_COLUMNS})
    return rows


def build_run_name(result: BuildResult) -> str:
    state = "champion" if result.promoted else "challenger"
    return f"built {result.router_id} {result.served} {len(result.models)} models ({state})"


def mlflow_links(settings: Settings, run_id: str | None) -> dict[str, str]:
    """The MLflow UI's page of a run and the URL of its deferral-curve image (served by `make serve`'s MLflow)."""
    if run_id is None:
        return {}
    base = settings.mlflow_ui_url
    return {"run": f"{base}/#/runs/{run_id}",
            "curves": f"{base}/get-artifact?path=deferral_curves.png&run_uuid={run_id}"}


def build_markdown(result: BuildResult, candidates: pd.DataFrame, run_id: str | None, links: dict[str, str]) -> str:
    """The build's summary: outcome, data, the candidates it weighed and the held-out evaluation."""
    area = "not measured" if result.val_area is None else f"{result.val_area:.4f}"
    lines = [
        f"# Nightly build: {result.router_id}",
        "",
        f"**{'Promoted to champion' if result.promoted else 'Kept as challenger'}**: {result.reason}.",
        "",
        f"- served kind {result.kind} ({result.value_label} = {result.k}), validation Area {area}",
        f"- {len(result.models)} models: {', '.join(result.models)}",
        f"- left out (no cost or too few results): {', '.join(result.excluded_models) or 'none'}",
        "- prompts: " + ", ".join(f"{n:,} {split}" for split, n in result.n_prompts.items()),
        "- seconds: " + ", ".join(f"{step} {s:.1f}" for step, s in result.seconds.items()),
    ]
    lines += [f"- note: {note}" for note in result.notes]
    if links:
        lines.append(f"- MLflow run: [{run_id}]({links['run']}), [deferral curves]({links['curves']})")
    if result.shadow is not None:
        lines += ["", "## Shadow gate (recent traffic, challenger vs champion at the same expected spend)", "",
                  result.shadow["line"], "", markdown_table(pd.DataFrame([result.shadow]).drop(columns=["line"]))]
    kinds = pd.DataFrame(candidate_rows(result))
    lines += ["", "## Router kinds compared (validation, training LLMs only)", "", result.selection or "", "",
              markdown_table(kinds) if len(kinds) else "(none recorded)"]
    shown = candidates.drop(columns=["created_at"], errors="ignore")
    lines += ["", "## Candidates", "", markdown_table(shown) if len(shown) else "(none recorded)"]
    lines += ["", "## Held-out evaluation (test prompts, whole pool)", "",
              markdown_table(pd.DataFrame(evaluation_rows(result))),
              "", "QNC: normalised cost to match the best single model, over that model's cost (inf: never)."]
    return "\n".join(lines)


def onboarding_markdown(result: OnboardResult, evidence: pd.DataFrame, gate: pd.DataFrame | None = None) -> str:
    """What onboarding did and, per new model, how much validation evidence its Psi row stands on and the
    evidence gate's verdict per cluster (where it is provisional and which prompts it should answer next)."""
    summary = pd.DataFrame(columns=["model", "clusters", "with_evidence", "on_fallback", "val_answers", "val_error"])
    if len(evidence):
        weighted = evidence.assign(weighted_error=evidence["error"] * evidence["cluster_val_prompts"])
        summary = weighted.groupby("model", as_index=False).agg(
            clusters=("cluster", "count"), with_evidence=("uses_fallback", lambda s: int((~s).sum())),
            on_fallback=("uses_fallback", "sum"), val_answers=("val_answers", "sum"),
            weighted_error=("weighted_error", "sum"), weight=("cluster_val_prompts", "sum"))
        summary = summary.assign(val_error=(summary.weighted_error / summary.weight).round(4)).drop(
            columns=["weighted_error", "weight"])
    return "\n".join([
        f"# Onboarding {', '.join(result.models + result.unchanged)}",
        "",
        result.line() + ".",
        "",
        markdown_table(summary),
        "",
        "on_fallback: clusters where the model answered no validation prompt (its overall mean error is used). "
        "val_error: its Psi row averaged with the clusters weighted by their validation prompts.",
        *_gate_markdown(result, gate),
    ])


def _gate_markdown(result: OnboardResult, gate: pd.DataFrame | None) -> list[str]:
    """The evidence gate's section: each model's status, its next prompts, and the per-cluster table."""
    if not result.gate:
        return []
    lines = ["", "## Evidence gate", ""]
    for model, verdict in result.gate.items():
        if verdict["status"] == "full":
            lines.append(f"- {model}: full (enough evidence wherever it wins at the default budget "
                         f"{verdict['budget']:g})")
        else:
            lines.append(f"- {model}: **provisional** in clusters {verdict['provisional_clusters']}: routed there by "
                         f"the upper end of its error's interval; answer next: {', '.join(verdict['next_prompts'])}")
    if gate is not None and len(gate):
        lines += ["", markdown_table(gate)]
    return lines


def onboard_run_name(result: OnboardResult) -> str:
    if not result.models:  # the run's reconciliation (or an earlier run) already made them routable
        return f"{', '.join(result.unchanged)} already routable in {result.router_id}"
    return f"onboarded {', '.join(result.models)} -> {result.router_id}"


def publish_run_name(result: PublishResult) -> str:
    return f"published {result.version}" if result.published else f"unchanged: {result.reason}"


def publish_markdown(result: PublishResult, changes: pd.DataFrame, traffic: pd.DataFrame) -> str:
    """What changed against the previous publication, and the new traffic share per model at each budget."""
    lines = [f"# Published {result.version}", "", f"Router {result.router_id}; pool: {', '.join(result.pool)}.", ""]
    if len(changes):
        lines += [f"## Changes since {changes['from_version'].iloc[0]} (budget grid)", "",
                  markdown_table(changes.drop(columns=["from_version"]).round(3))]
    else:
        lines += ["No earlier publication, or no model's traffic changed."]
    if len(traffic):
        pivot = traffic.pivot(index="model", columns="budget", values="traffic_share").round(3)
        pivot.columns = [f"budget {b:g}" for b in pivot.columns]
        lines += ["", "## Traffic share per model at each budget", "", markdown_table(pivot.reset_index())]
    return "\n".join(lines)


def inbox_run_name(outcomes: Sequence[InboxOutcome]) -> str:
    if not outcomes:
        return "inbox: nothing new"
    counts = Counter(o.status for o in outcomes)
    landed = sorted({m for o in outcomes for m in o.landed_models})
    text = "inbox: " + ", ".join(f"{n} {status}" for status, n in sorted(counts.items(), key=lambda c: (-c[1], c[0])))
    return text + (f"; results landed for {', '.join(landed)}" if landed else "")


def _read(db_path: Path, name: str, **params: Any) -> pd.DataFrame | None:
    """A named query on a read-only connection; None (logged) when another process holds the store."""
    try:
        with store.opened(db_path, read_only=True) as con:
            return store.query(con, name, **params)
    except store.StoreError as exc:
        get_run_logger().warning("artifact skipped, the store is busy: %s", exc)
        return None


def report_build(result: BuildResult, settings: Settings) -> None:
    """Artifacts of a build: summary, the candidate kinds' table, the evaluation table, the curves image."""
    candidates = _read(settings.db_path, "build_candidates", router_id=result.router_id)
    logged = _read(settings.db_path, "router_mlflow_run", router_id=result.router_id)
    run_id = str(logged.run_id.iloc[0]) if logged is not None and len(logged) else None
    links = mlflow_links(settings, run_id)
    if candidates is not None:
        create_markdown_artifact(build_markdown(result, candidates, run_id, links), key="uniroute-build",
                                 description=f"Nightly build {result.router_id}")
    if result.candidates:
        create_table_artifact(candidate_rows(result), key="uniroute-build-candidates",
                              description=f"Router kinds {result.router_id} chose among: {result.selection}")
    create_table_artifact(evaluation_rows(result), key="uniroute-build-evaluation",
                          description=f"Held-out evaluation of {result.router_id}")
    if links:
        create_image_artifact(links["curves"], key="uniroute-deferral-curves",
                              description=f"Deferral curves of {result.router_id} (from the MLflow UI)")
        create_link_artifact(links["run"], link_text=f"MLflow run {run_id}", key="uniroute-mlflow-run")


def report_onboarding(result: OnboardResult, settings: Settings) -> None:
    """Artifacts of an onboarding: summary per new model and its evidence per cluster."""
    models = list(result.models + result.unchanged)
    evidence = _read(settings.db_path, "models_evidence", router_id=result.router_id, models=models)
    if evidence is None:
        return
    gate = _read(settings.db_path, "onboarding_gate_of", router_id=result.router_id)
    create_markdown_artifact(onboarding_markdown(result, evidence, gate), key="uniroute-onboarding",
                             description=f"Onboarding {', '.join(models)}")
    if gate is not None and len(gate):
        create_table_artifact(gate.to_dict("records"), key="uniroute-onboarding-gate",
                              description="The evidence gate per new model and cluster (provisional: routed by its "
                                          "error's upper bound)")
    records = evidence.assign(coverage=evidence["coverage"].map(_number)).to_dict("records")
    create_table_artifact(records, key="uniroute-onboarding-evidence",
                          description="Validation answers behind each new Psi cell")


def report_publish(result: PublishResult, settings: Settings) -> None:
    """Artifact of a publication: what changed since the previous one and the new traffic shares."""
    if not result.published:
        return
    changes = _read(settings.db_path, "publication_changes", version=result.version)
    traffic = _read(settings.db_path, "publication_traffic", version=result.version)
    if changes is not None and traffic is not None:
        create_markdown_artifact(publish_markdown(result, changes, traffic), key="uniroute-publication",
                                 description=f"Routing tables {result.version}")



def report_traffic(settings: Settings, day: date) -> None:
    """Artifact of the inbox: a day's traffic (decisions, spend, realised quality, drift)."""
    try:
        with store.opened(settings.db_path, read_only=True) as con:
            traffic = traffic_day(con, day)
    except store.StoreError as exc:
        get_run_logger().warning("artifact skipped, the store is busy: %s", exc)
        return
    create_markdown_artifact(traffic_markdown(traffic), key="uniroute-traffic",
                             description=f"Traffic on {day:%Y-%m-%d}: {traffic.decisions:,} decisions")


def started(what: str):
    """A flow_run_name callable: what the run does and when it started, until rename_run says what it did."""
    from datetime import UTC, datetime

    return lambda: f"{what} {datetime.now(UTC):%Y-%m-%d %H:%M} UTC"
