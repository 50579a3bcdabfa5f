"""Onboarding: make new (or re-evaluated) models routable on the champion's frozen clusters, no retraining.

A model's Psi row is its mean loss per cluster on the validation prompts (a SQL group-by over the stored
cluster assignments). Only validation prompts that arrived with the new results and have no cluster yet are
embedded; old prompts are never re-embedded, nothing is re-clustered or retrained.

Onboarding runs inside the caller's session, so ingesting the results and writing the child router version
commit together. It is idempotent: a model whose Psi row and cost the champion already holds is reported as
routable and no version is written.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

from uniroute import store
from uniroute.faults import crashpoint
from uniroute.pipeline import registry
from uniroute.pipeline.battles import assign_battle_prompts
from uniroute.routers.psi_battles import onboard_psi

log = logging.getLogger(__name__)


class OnboardError(ValueError):
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

    def as_dict(self) -> dict:
        return {**self.__dict__, "models": list(self.models), "unchanged": list(self.unchanged)}

    def line(self) -> str:
        if not self.models:
            return (f"{', '.join(self.unchanged)} already routable in router {self.router_id}: "
                    "nothing to change")
        kept = f"; {', '.join(self.unchanged)} unchanged" if self.unchanged else ""
        return (
            f"onboarded {', '.join(self.models)} -> router {self.router_id} (parent {self.parent_id}), "
            f"{self.embedded_prompts} new prompts embedded{kept}, {self.seconds:.2f}s"
        )


def _same_row(router, model: str, psi: np.ndarray, counts: np.ndarray, cost: float) -> bool:
    """Whether the router already holds this model with exactly this Psi row, evidence and cost."""
    if model not in router.models:
        return False
    i = router.models.index(model)
    same_counts = router.psi_counts is None or np.array_equal(router.psi_counts[i], counts)
    return bool(np.array_equal(router.psi[i], psi) and same_counts and router.costs[i] == cost)


def onboard_models(con: store.Connection, models: Sequence[str], progress: bool = False,
                   cache_dir: Path | None = None) -> OnboardResult:
    """Add or refresh `models` in a child of the champion router, from their validation results."""
    started = time.perf_counter()
    models = tuple(dict.fromkeys(str(m) for m in models))
    if not models:
        raise OnboardError("no model named: nothing to onboard")
    champion = registry.load_champion(con)
    known = store.query(con, "model_status", models=list(models))
    unknown = sorted(set(models) - set(known.model))
    if unknown:
        raise OnboardError(f"models {unknown} have no results in the store: ingest their validation results first")
    store.execute(con, "reactivate_models", models=list(models))
    store.execute(con, "assign_splits")
    centroids = registry.centroids_of(con, champion.clustering_id)
    new_prompts = store.query(con, "unassigned_val_prompts", clustering_id=champion.clustering_id,
                              models=list(models))
    if len(new_prompts):
        from uniroute import embed

        embedder = champion.embedder(progress=progress, cache_dir=cache_dir)
        champion.router.check_embedder(embedder.embedder_id)
        X = embed.embed_cached(con, new_prompts["text"].tolist(), embedder)
        store.write_frame(con, "cluster_assignments", pd.DataFrame({
            "clustering_id": champion.clustering_id,
            "prompt_id": new_prompts["prompt_id"].to_numpy(),
            "cluster": centroids.assign(X).astype(np.int32),
        }))
    battle_prompts = assign_battle_prompts(con, champion.clustering_id, centroids,
                                           lambda: champion.embedder(progress=progress))
    crashpoint("onboard:embedded")
    val_clusters = store.query(con, "val_prompt_clusters", clustering_id=champion.clustering_id)
    router = champion.router
    try:  # results where a model has some, else its battles against the frozen pool
        psi = onboard_psi(con, val_clusters, models, router)
    except ValueError as exc:
        raise OnboardError(str(exc)) from exc
    missing = sorted(set(models) - set(psi.models))
    if missing:
        raise OnboardError(f"models {missing} have no results or battles on validation prompts: "
                           "nothing to build Psi from")
    costs = store.query(con, "model_val_costs").set_index("model")["cost"]
    no_cost = [m for m in models if pd.isna(costs.get(m))]
    if no_cost:
        raise OnboardError(f"models {no_cost} have no cost: give one with `uniroute models set-cost MODEL COST`")
    changed, unchanged = [], []
    for model in models:
        i = psi.models.index(model)
        cost = float(costs[model])
        if _same_row(router, model, psi.values[i], psi.counts[i], cost):
            unchanged.append(model)
            continue
        router = router.with_model(model, psi.values[i], cost,
                                   psi.counts[i] if router.psi_counts is not None else None)
        changed.append(model)
    if not changed:
        result = OnboardResult(champion.router_id, champion.parent_id or champion.router_id, (), tuple(unchanged),
                               len(new_prompts) + battle_prompts, time.perf_counter() - started)
        log.info(result.line())
        return result
    router_id = registry.new_router_id(champion.kind)
    registry.save_router_version(
        con,
        router,
        router_id,
        champion.clustering_id,
        centroids,
        kind=champion.kind,
        data_fingerprint=registry.data_fingerprint(con),
        val_area=champion.val_area,
        promoted=True,
        reason=f"onboarded {', '.join(changed)} onto {champion.router_id} at {datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ}",
        parent_id=champion.router_id,
        origin="onboard",
    )
    crashpoint("onboard:written")
    result = OnboardResult(router_id, champion.router_id, tuple(changed), tuple(unchanged),
                           len(new_prompts) + battle_prompts, time.perf_counter() - started)
    log.info(result.line())
    return result


def missing_from_champion(con: store.Connection) -> list[str]:
    """Active models with a cost and validation results that the champion router does not route."""
    champion = store.query(con, "champion_id")
    if champion.empty:
        return []
    routed = set(registry.load_champion(con).router.models)
    return [m for m in store.query(con, "onboardable_models").model if m not in routed]
