"""Which prompt mix turns a budget or a cost cap into lambda: the recent traffic when there is enough of it, else
the validation prompts; and it says which.

A budget (a fraction of the priciest model's cost) or a cap (`--max-cost`, mean cost per prompt) is a promise
about the mean cost of the prompts that will arrive. The validation prompts are the training mix; the decision
records keep each routed prompt's embedding, so once the store holds enough decisions in the window (settings
budget_traffic_days, budget_traffic_min_decisions) the mix the lambda is computed on is the traffic's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from uniroute.pipeline.serving.latency import recorded_latency
from uniroute.routers.rule import RoutingRule
from uniroute.routers.tables import validation_proxy, validation_weights

if TYPE_CHECKING:  # a request that reads no traffic (the default setting) routes without DuckDB or pandas
    import pandas as pd

    from uniroute import store

VALIDATION = "validation prompts"


@dataclass(frozen=True, eq=False)
class Calibration:
    """The prompts (n, d) a budget or cap is calibrated on (None: the router's validation stand-in), and where
    they came from, in one line (what published budgets and routed decisions say)."""

    X: np.ndarray | None = None
    source: str = VALIDATION
    # Each model's median latency in seconds over the same window's recorded calls (latency.recorded_latency):
    # what a latency cap compares against; a model absent has unknown latency.
    latency: Mapping[str, float] = field(default_factory=dict)

    @property
    def on_traffic(self) -> bool:
        return self.X is not None

    def prompts(self, router: RoutingRule) -> np.ndarray:
        """The mix as prompts: the traffic's, or the router's validation stand-in."""
        return validation_proxy(router) if self.X is None else self.X

    def cluster_weights(self, router: RoutingRule) -> np.ndarray:
        """(K,) prompts per cluster of a one-hot router on this mix (the routing tables' weights)."""
        if self.X is None:
            return validation_weights(router)
        return np.bincount(router.prompt_clusters(self.X), minlength=router.k)  # type: ignore[arg-type]  # one-hot


@dataclass(frozen=True)
class TrafficWindow:
    """How much recent traffic calibrates: decisions of the last `days`, used when at least `min_decisions`, the
    newest `max_decisions` of them (a bound on what a route call reads)."""

    days: float = 7.0
    min_decisions: int = 500
    max_decisions: int = 20_000


def traffic_calibration(con: store.Connection, embedder_id: str, window: TrafficWindow,
                        now: datetime | None = None) -> Calibration:
    """The traffic mix of the window for routers on embedder_id when it holds enough decisions, else the
    validation prompts (the line says how many decisions there were)."""
    from uniroute import store

    now = now or datetime.now(UTC).replace(tzinfo=None)
    since = now - timedelta(days=window.days)
    rows = store.query(con, "traffic_mix", embedder_id=embedder_id, since=since, limit=max(window.max_decisions, 1))
    found = int(rows["in_window"].iloc[0]) if len(rows) else 0
    X = stacked_embeddings(rows)
    latency = recorded_latency(con, since)
    if found < window.min_decisions or len(X) < min(window.min_decisions, len(rows)) or len(X) == 0:
        return Calibration(None, f"{VALIDATION} (traffic window {window.days:g} days: {found} decisions, "
                                 f"{window.min_decisions} needed)", latency)
    oldest = rows["since"].iloc[0]
    used = f"newest {len(rows)} of " if len(rows) < found else ""
    return Calibration(X, f"traffic window: {used}{found} decisions since {oldest:%Y-%m-%d %H:%M}", latency)


def stacked_embeddings(rows: pd.DataFrame, dim: int | None = None) -> np.ndarray:
    """(n, d) float32 of the rows' float16 embeddings of size `dim` (default: the most common size); rows of
    another size (stored before records were checked at ingest) are left out, never stacked ragged."""
    if dim is None:
        dim = int(rows["embedding_dim"].mode().iloc[0]) if len(rows) else 0
    kept = [bytes(b) for b, d in zip(rows["embedding"], rows["embedding_dim"], strict=True) if d == dim]
    if not kept:
        return np.empty((0, dim), dtype=np.float32)
    return np.frombuffer(b"".join(kept), dtype="<f2").reshape(len(kept), dim).astype(np.float32)


def calibration_at(db_path: Path, embedder_id: str, window: TrafficWindow) -> Calibration:
    """traffic_calibration read through a read-only connection; the validation prompts while a writer holds the
    store or where there is no store (a served model away from its home): routing never waits for the writer."""
    import duckdb

    from uniroute import store

    if not Path(db_path).exists():
        return Calibration(source=f"{VALIDATION} (no store at {db_path} to read the traffic from)")
    try:
        con = store.open_read_only(db_path)
    except store.StoreLocked:
        return Calibration(source=f"{VALIDATION} (the store is busy: its traffic is not readable now)")
    except (store.StoreError, duckdb.Error) as exc:  # routing must not fail for want of its calibration
        return Calibration(source=f"{VALIDATION} (the store's traffic is not readable: {str(exc).splitlines()[0]})")
    try:
        return traffic_calibration(con, embedder_id, window)
    except duckdb.Error as exc:  # a store from before decision records: no traffic to read
        return Calibration(source=f"{VALIDATION} (the store's traffic is not readable: {str(exc).splitlines()[0]})")
    finally:
        con.close()
