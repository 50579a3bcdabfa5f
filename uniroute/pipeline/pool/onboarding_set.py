"""The onboarding set of the store: which validation prompts a new LLM should answer to join the champion's pool.

Reads the champion (its clusters and embedder), the validation prompts, and the active pool's losses on the
training and validation prompts; the choice itself is `selection/onboarding_order.py` (the method and its reasoning
are there). A model that answered some validation prompts already (`model`) continues with the next best ones:
its answers count toward their clusters and are never asked again. A kind without clusters (K-NN) is one cluster
here: the order is then the within-cluster one alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from uniroute import embed, store
from uniroute.errors import UnirouteError
from uniroute.pipeline.pool import registry
from uniroute.selection.onboarding_order import STRATEGIES, PoolView, onboarding_order


class OnboardingSetError(UnirouteError, ValueError):
    """An onboarding set that cannot be chosen; the message says why."""


@dataclass(frozen=True)
class OnboardingSet:
    """The chosen prompts, best first (prompt_id, prompt, cluster, rank), and what they were chosen for."""

    prompts: pd.DataFrame
    router_id: str
    strategy: str
    model: str | None
    answered: int  # validation prompts the model had answered already
    candidates: int  # validation prompts it had not

    def line(self) -> str:
        who = f" for {self.model} (after its {self.answered} answers)" if self.model else ""
        return (f"{len(self.prompts)} of {self.candidates} validation prompts chosen{who} by `{self.strategy}` "
                f"for champion {self.router_id}")


def _frames(con: store.Connection, clustering_id: str, models: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    candidates = store.query(con, "onboarding_candidates", clustering_id=clustering_id)
    losses = store.query(con, "onboarding_pool_losses", clustering_id=clustering_id, models=models)
    return candidates, losses


def choose_onboarding_set(con: store.Connection, size: int, strategy: str, model: str | None = None,
                          cache_dir: Path | None = None, seed: int = 0,
                          clusters: Sequence[int] | None = None) -> OnboardingSet:
    """The next `size` validation prompts to send to a new model (or to `model`, which answered some already);
    `clusters`: only prompts of those clusters (the evidence gate's provisional ones,
    pipeline/pool/evidence_gate.py)."""
    if size < 1:
        raise OnboardingSetError(f"--size must be at least 1, got {size}")
    if strategy not in STRATEGIES:
        raise OnboardingSetError(f"unknown strategy {strategy!r}: choose from {', '.join(STRATEGIES)}")
    champion = registry.load_champion(con, embedder=False)  # its embedder only for the anchored strategy
    router = champion.router
    # The pool whose answers guide the choice; a model continuing (already routed on its first answers) is the
    # newcomer here, not part of the pool it is measured against.
    pool = [m for m in router.models if m in set(store.query(con, "active_models").model) and m != model]
    candidates, losses = _frames(con, champion.clustering_id, pool)
    if candidates.empty:
        raise OnboardingSetError("the store has no validation prompts to choose from (`uniroute build` assigns "
                                 "them)")
    answered_ids = set() if model is None else set(store.query(con, "onboarding_answered", model=model).prompt_id)
    all_clusters = _clusters(candidates, losses)
    k = int(max(all_clusters.max(), losses["cluster"].max() if losses["cluster"].notna().any() else 0)) + 1
    keep = np.ones(len(candidates), dtype=bool) if clusters is None else np.isin(all_clusters, list(clusters))
    candidates, kept_clusters = candidates[keep].reset_index(drop=True), all_clusters[keep]
    train = losses[losses["split"] == "train"]
    train_clusters = train.assign(cluster=train["cluster"].fillna(0).astype(int))
    wide_train = train_clusters.pivot_table(index=["prompt_id", "cluster"], columns="model", values="loss")
    view = PoolView.of(wide_train.index.get_level_values("cluster").to_numpy(), wide_train.to_numpy(float), k)
    val_losses = (losses[losses["split"] == "val"].pivot_table(index="prompt_id", columns="model", values="loss")
                  .reindex(index=candidates["prompt_id"], columns=pool).to_numpy(float))
    X = None
    if strategy == "anchored":  # the only strategy that reads the prompts' embeddings
        embedder = registry.version_embedder(con, champion, cache_dir=cache_dir)
        router.check_embedder(embedder.embedder_id)
        X = embed.embed_cached(con, candidates["text"].tolist(), embedder)
    answered = np.flatnonzero(candidates["prompt_id"].isin(answered_ids).to_numpy())
    if strategy == "random":  # the stored order is by prompt id: a seeded shuffle of the unanswered
        order = np.random.default_rng(seed).permutation(np.setdiff1d(np.arange(len(candidates)), answered))[:size]
    else:
        order = onboarding_order(strategy, kept_clusters, view, size, X=X, pool_losses=val_losses, answered=answered,
                                 seed=seed)
    chosen = candidates.iloc[order]
    prompts = pd.DataFrame({"prompt_id": chosen["prompt_id"].to_numpy(), "prompt": chosen["text"].to_numpy(),
                            "cluster": kept_clusters[order], "rank": np.arange(1, len(order) + 1)})
    return OnboardingSet(prompts, champion.router_id, strategy, model, len(answered),
                         len(candidates) - len(answered))


def _clusters(candidates: pd.DataFrame, losses: pd.DataFrame) -> np.ndarray:
    """(n,) the candidates' clusters; one cluster for a kind without clusters. A candidate the build did not
    assign (it arrived after) joins the largest cluster: it is still a validation prompt worth asking."""
    if candidates["cluster"].isna().all():
        return np.zeros(len(candidates), dtype=np.int64)
    largest = int(losses["cluster"].mode().iloc[0]) if losses["cluster"].notna().any() else 0
    return candidates["cluster"].fillna(largest).astype(np.int64).to_numpy()
