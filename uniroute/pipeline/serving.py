"""Routing decisions for new prompts with the champion router, optionally appended to `routing_log`."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

from uniroute import store
from uniroute.pipeline import registry
from uniroute.routers.tables import validation_proxy


class RoutingError(ValueError):
    """A routing request that cannot be answered as asked."""


def route_texts(
    db_path: Path,
    texts: Sequence[str],
    lam: float | None = None,
    budget: float | None = None,
    pool: Sequence[str] | None = None,
    log: bool = False,
) -> pd.DataFrame:
    """One row per prompt: the chosen model and cluster under the champion router (lambda or budget)."""
    from uniroute import embed

    if not texts:
        raise RoutingError("no prompt given")
    if lam is not None and budget is not None:
        raise RoutingError("give a lambda or a budget, not both")
    champion = registry.load_champion(db_path, read_only=not log)
    router = champion.router
    if pool is None:
        with store.opened(db_path, read_only=not log) as con:
            active = set(store.query(con, "active_models").model)
        pool = [m for m in router.models if m in active]
        if not pool:
            raise RoutingError(f"champion {champion.router_id} has no active model: onboard one first")
    embedder = champion.embedder()
    router.check_embedder(embedder.embedder_id)
    X = embedder.encode(list(texts))
    if budget is not None:
        lam = router.lambda_for_budget(validation_proxy(router), budget, pool)
    lam = 0.0 if lam is None else float(lam)
    chosen = router.route(X, lam, pool)
    decisions = pd.DataFrame(
        {
            "prompt_index": np.arange(len(texts), dtype=np.int32),
            "text_hash": [embed.text_hash(t) for t in texts],
            "cluster": router.assigner.assign(X).astype(np.int32),
            "model": np.asarray(router.models, dtype=object)[chosen],
            "lam": lam,
            "budget": budget,
            "router_id": champion.router_id,
        }
    )
    if log:
        rows = decisions.assign(batch_id=uuid.uuid4().hex, routed_at=datetime.now(UTC).replace(tzinfo=None))
        with store.opened(db_path) as con, store.transaction(con):
            store.write_frame(con, "routing_log", rows)
    return decisions
