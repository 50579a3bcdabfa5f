"""Routing new prompts: the champion router from the store, or the published snapshot while the store is busy.

`routing_source` reads the champion and the active pool from the store through a read-only connection. When a
writer (a build, an ingest, an onboarding) holds the store, it answers from the published `current` snapshot
instead, which carries the router, its pool and a fitted embedder if any, and says so: which version answered
and which operation holds the store. Routing itself is a pure function of the router.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from uniroute import store
from uniroute.errors import UnirouteError
from uniroute.pipeline import registry, snapshot
from uniroute.routers.serialize import AnyRouter
from uniroute.routers.tables import validation_proxy


class RoutingError(UnirouteError, ValueError):
    """A routing request that cannot be answered as asked."""


@dataclass(frozen=True)
class RoutingSource:
    """The router that answers, the pool it may choose from, and where it came from."""

    router: AnyRouter
    router_id: str
    pool: tuple[str, ...]  # active models the router routes
    retired: frozenset[str]  # models taken out of the pool (refused by name)
    embedder_state: bytes | None  # the stored embedder (embed.portable), or None when it is built by name
    source: str  # one line: the store's champion, or the published version answering while the store is busy

    def embedder(self, cache_dir: Path | None = None) -> Any:
        """The router's embedder: restored from its state, or built by name (into cache_dir where needed)."""
        from uniroute import embed

        if self.embedder_state is not None:
            return embed.embedder_from_state(self.embedder_state, cache_dir)
        return embed.make_embedder(registry.embedder_name(self.router.embedder_id), progress=False,
                                   cache_dir=cache_dir)


def _from_store(con: store.Connection) -> RoutingSource:
    champion = registry.load_champion(con)
    active = set(store.query(con, "active_models").model)
    retired = frozenset(store.query(con, "retired_models").model)
    pool = tuple(m for m in champion.router.models if m in active)
    return RoutingSource(champion.router, champion.router_id, pool, retired, champion.embedder_state,
                         f"champion router {champion.router_id}")


def _from_snapshot(published_dir: Path, why: str) -> RoutingSource:
    try:
        snap = snapshot.read_current(published_dir)
    except snapshot.PublishError as exc:
        raise RoutingError(f"{why}, and nothing is published to answer from ({exc})") from exc
    router = snap.router()
    pool = tuple(snap.manifest["pool"])
    retired = frozenset(m for m in router.models if m not in pool)
    return RoutingSource(router, snap.manifest["router_id"], pool, retired, snap.embedder_state(),
                         f"published snapshot {snap.version} (router {snap.manifest['router_id']}): {why}")


def routing_source(db_path: Path, published_dir: Path) -> RoutingSource:
    """The champion from the store, or, while a writer holds the store, the published `current` snapshot."""
    try:
        con = store.open_read_only(db_path)
    except store.StoreLocked:
        holder = store.current_holder(db_path)
        who = holder.line() if holder is not None else "another process"
        return _from_snapshot(published_dir, f"the store is held by {who}")
    try:
        return _from_store(con)
    finally:
        con.close()


def checked_request(source: RoutingSource, texts: Sequence[str], lam: float | None, budget: float | None,
                    pool: Sequence[str] | None) -> tuple[list[str], tuple[str, ...]]:
    """The prompts and the pool of a request, checked; RoutingError in one line for anything off."""
    texts = list(texts)
    if not texts:
        raise RoutingError("no prompt given")
    for i, text in enumerate(texts, start=1):
        if not isinstance(text, str) or not text.strip():
            raise RoutingError(f"prompt {i} is empty: give the text to route")
    if lam is not None and budget is not None:
        raise RoutingError("give a lambda or a budget, not both")
    if lam is not None and not (math.isfinite(lam) and lam >= 0):
        raise RoutingError(f"lambda must be a finite number >= 0, not {lam}")
    if budget is not None and not (math.isfinite(budget) and 0 < budget <= 1):
        raise RoutingError(f"budget must be in (0, 1] (a fraction of the priciest pool model's cost), not {budget}")
    if not source.pool:
        raise RoutingError(f"router {source.router_id} has no active model: onboard one first")
    if pool is None:
        return texts, source.pool
    names = tuple(dict.fromkeys(p.strip() for p in pool if p.strip()))
    if not names:
        raise RoutingError("the pool is empty: name at least one model")
    retired = [m for m in names if m in source.retired]
    if retired:
        raise RoutingError(f"models {retired} are retired and out of the pool (onboard them again to bring them back)")
    unknown = [m for m in names if m not in source.pool]
    if unknown:
        raise RoutingError(f"models {unknown} are not in the pool of router {source.router_id} "
                           f"(pool: {', '.join(source.pool)})")
    return texts, names


def route_texts(
    source: RoutingSource,
    texts: Sequence[str],
    lam: float | None = None,
    budget: float | None = None,
    pool: Sequence[str] | None = None,
    embedder: Any = None,
    cache_dir: Path | None = None,
) -> pd.DataFrame:
    """One row per prompt: the chosen model and its cluster (lambda, or the lambda that meets a budget)."""
    from uniroute.embed import text_hash

    texts, pool = checked_request(source, texts, lam, budget, pool)
    router = source.router
    embedder = embedder or source.embedder(cache_dir)
    router.check_embedder(embedder.embedder_id)
    X = embedder.encode(texts)
    if budget is not None:
        try:
            lam = router.lambda_for_budget(validation_proxy(router), budget, pool)
        except ValueError as exc:
            raise RoutingError(str(exc)) from exc
    lam = 0.0 if lam is None else float(lam)
    chosen = router.route(X, lam, pool)
    return pd.DataFrame(
        {
            "prompt_index": np.arange(len(texts), dtype=np.int32),
            "text_hash": [text_hash(t) for t in texts],
            "cluster": cluster_of(router, X),
            "model": np.asarray(router.models, dtype=object)[chosen],
            "lam": lam,
            "budget": budget,
            "router_id": source.router_id,
        }
    )


def cluster_of(router: AnyRouter, X: np.ndarray) -> pd.Series:
    """Each prompt's cluster (nullable Int32): nearest centroid, the LearnedMap's likeliest cluster, or null for a
    kind without clusters (K-NN routes by neighbours)."""
    clusters = router.prompt_clusters(X)
    if clusters is None:
        return pd.Series(pd.NA, index=range(X.shape[0]), dtype="Int32")
    return pd.Series(clusters.astype(np.int32), dtype="Int32")


def log_decisions(con: store.Connection, decisions: pd.DataFrame) -> str:
    """Append a batch of decisions to routing_log (in the caller's session); the batch id."""
    batch_id = uuid.uuid4().hex
    store.write_frame(con, "routing_log", decisions.assign(batch_id=batch_id,
                                                           routed_at=datetime.now(UTC).replace(tzinfo=None)))
    return batch_id
