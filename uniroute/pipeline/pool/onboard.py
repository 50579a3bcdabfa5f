"""Onboarding: make new (or re-evaluated) models routable by the champion, whatever its kind, no retraining.

Kinds with clusters for Psi rows (router.psi_centroids(): K-means, count-aware K-means, LearnedMap): a model's
Psi row is its mean loss per cluster on the validation prompts (a SQL group-by over the stored cluster
assignments of the clusters Psi is measured on), or, for a model with battles only, its per-cluster
Bradley-Terry strengths against the frozen pool (psi_battles). Only validation prompts that arrived with the new
results and have no cluster yet are embedded; old prompts are never re-embedded, nothing is re-clustered or
retrained. Kinds without clusters (K-NN): the model's row comes from its per-prompt validation labels
(router.model_row; K-NN joins them to its neighbour table by prompt id); nothing is embedded.

Onboarding runs inside the caller's session, so ingesting the results and writing the child router version
commit together. It is idempotent: a model whose Psi row and cost the champion already holds is reported as
routable and no version is written.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, cast

import numpy as np
import pandas as pd

from uniroute import embed, store
from uniroute.errors import UnirouteError
from uniroute.faults import crashpoint
from uniroute.pipeline.pool import registry
from uniroute.pipeline.pool.battles import assign_battle_prompts
from uniroute.pipeline.pool.evidence import MIN_VAL_ANSWERS, thin_among, thin_models
from uniroute.pipeline.pool.evidence_gate import GateThresholds, ModelGate, gate_model
from uniroute.pipeline.pool.onboarding_set import choose_onboarding_set
from uniroute.pipeline.pool.psi_data import onboard_psi
from uniroute.routers.kinds import router_kind
from uniroute.routers.serialize import AnyRouter

if TYPE_CHECKING:
    from uniroute.routers.router import Router

log = logging.getLogger(__name__)


class OnboardError(UnirouteError, ValueError):
    """Models that cannot be onboarded; the message names them and says why."""


@dataclass(frozen=True)
class OnboardResult:
    """The router version that routes the models: a new child of the champion, or the champion itself."""

    router_id: str
    parent_id: str
    models: tuple[str, ...]  # models added or refreshed by this run
    unchanged: tuple[str, ...]  # models the champion already routed with the same Psi row and cost
    embedded_prompts: int
    seconds: float
    waiting: dict[str, int] = field(default_factory=dict)  # model -> its validation answers, too few for traffic
    min_answers: int = MIN_VAL_ANSWERS
    # model -> the evidence gate's verdict (pipeline/pool/evidence_gate.py): status full|provisional, the default
    # budget it was judged at, the provisional clusters and the prompts to answer next there, best first
    gate: dict[str, dict] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {**self.__dict__, "models": list(self.models), "unchanged": list(self.unchanged)}

    def _gate_line(self) -> str:
        parts = []
        for m, g in self.gate.items():
            if g["status"] == "full":
                parts.append(f"{m} passes the evidence gate")
                continue
            ids = g["next_prompts"]
            shown = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
            parts.append(f"{m} is provisional in clusters {g['provisional_clusters']} (it would win them at the "
                         f"default budget {g['budget']:g} on too little evidence: routed there by the upper end of "
                         f"its error's interval until it answers {len(ids)} more: {shown})")
        return "; ".join(parts)

    def _waiting_line(self) -> str:
        return "; ".join(f"{m} waits for more evidence ({n} validation answers, {self.min_answers} needed before it "
                         "takes traffic)" for m, n in self.waiting.items())

    def line(self) -> str:
        waiting = self._waiting_line()
        if not self.models:
            if not self.unchanged:
                return waiting
            done = f"{', '.join(self.unchanged)} already routable in router {self.router_id}: nothing to change"
            return done + (f"; {waiting}" if waiting else "")
        kept = f"; {', '.join(self.unchanged)} unchanged" if self.unchanged else ""
        gate = self._gate_line()
        return (
            f"onboarded {', '.join(self.models)} -> router {self.router_id} (parent {self.parent_id}), "
            f"{self.embedded_prompts} new prompts embedded{kept}, {self.seconds:.2f}s"
            + (f"; {gate}" if gate else "") + (f"; {waiting}" if waiting else "")
        )


def _cluster_rows(con: store.Connection, champion: registry.RouterVersion, models: tuple[str, ...], progress: bool,
                  cache_dir: Path | None) -> tuple[dict[str, tuple[np.ndarray, np.ndarray | None]], int]:
    """({model: (Psi row (K,), counts (K,) or None)}, prompts embedded): a SQL group-by on the frozen clusters."""
    router = cast("Router", champion.router)  # rows on frozen clusters: a cluster router
    centroids = router.psi_centroids()
    new_prompts = store.query(con, "unassigned_val_prompts", clustering_id=champion.clustering_id,
                              models=list(models))
    if len(new_prompts):
        embedder = registry.version_embedder(con, champion, progress=progress, cache_dir=cache_dir)
        router.check_embedder(embedder.embedder_id)
        X = embed.embed_cached(con, new_prompts["text"].tolist(), embedder)
        store.write_frame(con, "cluster_assignments", pd.DataFrame({
            "clustering_id": champion.clustering_id,
            "prompt_id": new_prompts["prompt_id"].to_numpy(),
            "cluster": centroids.assign(X).astype(np.int32),
        }))
    battle_prompts = assign_battle_prompts(
        con, champion.clustering_id, centroids,
        lambda: registry.version_embedder(con, champion, progress=progress, cache_dir=cache_dir))
    val_clusters = store.query(con, "val_prompt_clusters", clustering_id=champion.clustering_id)
    try:  # results where a model has some, else its battles against the frozen pool
        psi = onboard_psi(con, val_clusters, models, router)
    except ValueError as exc:
        raise OnboardError(str(exc)) from exc
    missing = sorted(set(models) - set(psi.models))
    if missing:
        raise OnboardError(f"models {missing} have no results or battles on validation prompts: "
                           "nothing to build Psi from")
    keep_counts = router.psi_counts is not None
    rows = {m: (psi.values[i], psi.counts[i] if keep_counts else None) for i, m in enumerate(psi.models)}
    return rows, len(new_prompts) + battle_prompts


def _label_rows(con: store.Connection, router: AnyRouter,
                models: tuple[str, ...]) -> dict[str, tuple[np.ndarray, np.ndarray | None]]:
    """{model: (its row, counts or None)} for a kind without clusters: its per-prompt validation results through
    router.model_row (K-NN: joined to the neighbour table by prompt id); nothing is embedded."""
    name = _kind_name(router)
    results = store.query(con, "model_val_losses", models=list(models))
    missing = sorted(set(models) - set(results["model"]))
    if missing:
        raise OnboardError(f"models {missing} have no results on validation prompts: nothing to route them by "
                           f"(a {name} champion routes by per-prompt labels, which battles do not give)")
    rows = {}
    for model, group in results.groupby("model", sort=False):
        losses = group["loss"].to_numpy(float)
        row, counts = router.model_row(group["prompt_id"].tolist(), np.empty((len(losses), 0)), losses)
        if np.isnan(row).all():
            raise OnboardError(f"model {model!r} has no result on any of the {len(row)} reference prompts of the "
                               f"{name} champion: give it results on the validation prompts the router was built on")
        rows[str(model)] = (row, counts)
    return rows


def _kind_name(router: AnyRouter) -> str:
    """How messages name the router's kind: its report title ("K-NN"), else its name."""
    return router_kind(router.kind).title or router.kind


def onboard_models(con: store.Connection, models: Sequence[str], progress: bool = False,
                   cache_dir: Path | None = None, reactivate: bool = False,
                   min_answers: int = MIN_VAL_ANSWERS, gate: GateThresholds = GateThresholds()) -> OnboardResult:
    """Add or refresh `models` in a child of the champion router, from their validation results.

    A retired model stays retired (late results, an inbox file, a reconciliation never bring it back) unless
    `reactivate` says so on purpose. A model with fewer than min_answers validation answers is not routed yet:
    its results stay stored and the result says it waits for more evidence. A model that would win a cluster on
    too little evidence there is provisional in it (`gate`, pipeline/pool/evidence_gate.py).
    """
    started = time.perf_counter()
    models = tuple(dict.fromkeys(str(m) for m in models))
    if not models:
        raise OnboardError("no model named: nothing to onboard")
    champion = registry.load_champion(con, embedder=False)  # its embedder only if a prompt needs embedding
    known = store.query(con, "model_status", models=list(models))
    unknown = sorted(set(models) - set(known.model))
    if unknown:
        raise OnboardError(f"models {unknown} have no results in the store: ingest their validation results first")
    retired = sorted(known.model[known.status == "retired"])
    if retired and not reactivate:
        raise OnboardError(f"models {retired} were retired: onboarding them again needs `--reactivate` "
                           "(their results are kept; the pool does not take them back by accident)")
    store.execute(con, "reactivate_models", models=list(models))
    store.execute(con, "assign_splits")
    val_costs = store.query(con, "model_val_costs")  # the answer counts here, the costs below: one read
    waiting = thin_among(val_costs, models, min_answers)
    models = tuple(m for m in models if m not in waiting)
    if not models:
        result = OnboardResult(champion.router_id, champion.parent_id or champion.router_id, (), (), 0,
                               time.perf_counter() - started, waiting, min_answers)
        log.info(result.line())
        return result
    if champion.router.psi_centroids() is None:
        rows, embedded = _label_rows(con, champion.router, models), 0
    else:
        rows, embedded = _cluster_rows(con, champion, models, progress, cache_dir)
    crashpoint("onboard:embedded")
    costs = val_costs.set_index("model")["cost"]
    no_cost = [m for m in models if pd.isna(costs.get(m))]
    if no_cost:
        raise OnboardError(f"models {no_cost} have no cost: give one with `uniroute models set-cost MODEL COST`")
    router = champion.router
    changed, unchanged = [], []
    for model in models:
        row, counts = rows[model]
        cost = float(costs[model])
        if router.holds_row(model, row, counts, cost):
            unchanged.append(model)
            continue
        router = router.with_model(model, row, cost, counts)
        changed.append(model)
    # A model whose row is unchanged is judged again: the gate's thresholds (settings) or the pool may have moved.
    regate = _verdict_changed(con, router, unchanged, gate)
    changed += regate
    unchanged = [m for m in unchanged if m not in regate]
    if not changed:
        result = OnboardResult(champion.router_id, champion.parent_id or champion.router_id, (), tuple(unchanged),
                               embedded, time.perf_counter() - started, waiting, min_answers)
        log.info(result.line())
        return result
    router, gates = _gated(con, router, changed, gate)
    router_id = registry.new_router_id(champion.kind)
    registry.save_router_version(con, registry.NewVersion(  # the champion's clustering is stored already
        router,
        router_id,
        champion.clustering_id,
        kind=champion.kind,
        data_fingerprint=registry.data_fingerprint(con),
        val_area=champion.val_area,
        promoted=True,
        reason=f"onboarded {', '.join(changed)} onto {champion.router_id} at {datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ}",
        parent_id=champion.router_id,
        origin="onboard",
        price_snapshot=registry.price_snapshot(con),
    ))
    _record_gates(con, router_id, gates, gate)
    crashpoint("onboard:written")
    verdicts = {m: g.summary() for m, g in gates.items()}
    result = OnboardResult(router_id, champion.router_id, tuple(changed), tuple(unchanged), embedded,
                           time.perf_counter() - started, waiting, min_answers, verdicts)
    log.info(result.line())
    return result


@dataclass(frozen=True)
class _Gated:
    """A model's gate verdict and the prompts it should answer next in its provisional clusters."""

    verdict: ModelGate
    next_prompts: dict[int, list[str]]

    def summary(self) -> dict:
        ids = [p for c in sorted(self.next_prompts) for p in self.next_prompts[c]]
        return {"status": self.verdict.status, "budget": self.verdict.budget,
                "provisional_clusters": self.verdict.provisional, "next_prompts": ids}


def _gated(con: store.Connection, router: AnyRouter, changed: list[str],
           thresholds: GateThresholds) -> tuple[AnyRouter, dict[str, _Gated]]:
    """The router with each changed model's provisional cells routed by their bound, and the verdicts; a kind
    without Psi clusters (K-NN) has no cells to gate."""
    if router.psi_centroids() is None or not hasattr(router, "with_floor"):
        return router, {}
    router = cast("Router", router)  # a kind with Psi clusters and a gate floor
    active = set(store.query(con, "active_models").model)
    pool = tuple(m for m in router.models if m in active)
    gates = {}
    for model in changed:
        router = router.with_floor(model, np.zeros(router.k))  # judged on its measured cells alone
        verdict = gate_model(router, model, pool, thresholds)
        router = router.with_floor(model, verdict.floor)
        # The onboarding set's continuation for the model, restricted to each cluster it is provisional in.
        next_prompts = {c: choose_onboarding_set(con, n, "best", model, clusters=[c]).prompts["prompt_id"].tolist()
                        for c, n in verdict.answers_needed().items()}
        gates[model] = _Gated(verdict, next_prompts)
    return router, gates


def _verdict_changed(con: store.Connection, router: AnyRouter, models: list[str],
                     thresholds: GateThresholds) -> list[str]:
    """The newcomers (judged by the gate before) whose gated cells the gate would set differently today."""
    if not models or router.psi_centroids() is None or not hasattr(router, "with_floor"):
        return []
    router = cast("Router", router)  # a kind with Psi clusters and a gate floor
    judged = set(store.query(con, "onboarding_gated_models", models=list(models)).model)
    models = [m for m in models if m in judged]
    active = set(store.query(con, "active_models").model)
    pool = tuple(m for m in router.models if m in active)
    out = []
    for model in models:
        i = router.models.index(model)
        held = np.zeros(router.k) if router.psi_floor is None else router.psi_floor[i]
        fresh = router.with_floor(model, np.zeros(router.k))
        if not np.array_equal(gate_model(fresh, model, pool, thresholds).floor, held):
            out.append(model)
    return out


def _record_gates(con: store.Connection, router_id: str, gates: dict[str, _Gated],
                  thresholds: GateThresholds) -> None:
    """The gate's rows of this version (the `onboarding_evidence` view reads them)."""
    frames = [g.verdict.cells.assign(
        router_id=router_id, model=m, budget=g.verdict.budget, min_cluster_answers=thresholds.min_cluster_answers,
        max_interval_width=thresholds.max_interval_width,
        next_prompts=[g.next_prompts.get(int(c), []) for c in g.verdict.cells["cluster"]])
        for m, g in gates.items()]
    if frames:
        store.write_frame(con, "onboarding_gate", pd.concat(frames, ignore_index=True))


def missing_from_champion(con: store.Connection, min_answers: int = MIN_VAL_ANSWERS) -> list[str]:
    """Active models with a cost and enough validation results that the champion router does not route."""
    champion = store.query(con, "champion_id")
    if champion.empty:
        return []
    routed = set(registry.load_champion(con, embedder=False).router.models)
    missing = [m for m in store.query(con, "onboardable_models").model if m not in routed]
    thin = thin_models(con, missing, min_answers)
    return [m for m in missing if m not in thin]
