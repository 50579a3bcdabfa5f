"""A latency cap (`--max-latency S`, `uniroute/max-latency-S`, the pyfunc's `max_latency`): models whose recorded
latency is above S seconds leave the candidates, for the choice and for every fall-back, as a cost cap keeps
fall-backs under it.

A model's latency is the median of its successful calls in the request path over the traffic window (the
gateway's attempts; sql/queries/model_latency_recent.sql, the model_latency view). A model with no recorded call
there has unknown latency: it stays a candidate (leaving it out would silently shrink the pool to the models the
gateway happened to call), and the routing says which models were kept unknown. A cap rather than a weight
(argmin error + lambda * cost + w * latency): a budget or a max cost turns into lambda on the prompt mix, and a
third term would move that calibration's choice without it knowing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # routing checks a latency cap without the store's DuckDB (read in recorded_latency only)
    from uniroute import store


def check_max_latency(max_latency: float) -> float:
    """max_latency as a float in seconds; ValueError unless finite and > 0."""
    try:
        value = float(max_latency)
    except (TypeError, ValueError):
        raise ValueError(f"max latency must be a number of seconds > 0, not {max_latency!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"max latency must be a finite number of seconds > 0, not {max_latency!r}")
    return value


def recorded_latency(con: store.Connection, since: datetime) -> dict[str, float]:
    """Each model's median latency in seconds of its successful calls since `since` (models without one absent)."""
    import duckdb

    from uniroute import store

    try:
        rows = store.query(con, "model_latency_recent", since=since)
    except duckdb.Error:  # a store from before the gateway's records: no call latency recorded anywhere
        return {}
    return {str(r.model): float(r.latency_s) for r in rows.itertuples(index=False)}


@dataclass(frozen=True)
class LatencyCut:
    """A pool under a latency cap: the models kept, those above the cap, those kept with unknown latency."""

    kept: tuple[str, ...]
    slow: tuple[str, ...]
    unknown: tuple[str, ...]

    def line(self, max_latency: float, latency: Mapping[str, float]) -> str:
        """One line saying what the cap did (what `uniroute route` prints on stderr)."""
        slow = ", ".join(f"{m} ({latency[m]:.3g} s)" for m in self.slow) or "none"
        line = f"max latency {max_latency:g} s (median of recorded calls): left out {slow}"
        if self.unknown:
            line += f"; kept with no recorded latency: {', '.join(self.unknown)}"
        return line


def latency_cut(pool: Sequence[str], max_latency: float, latency: Mapping[str, float]) -> LatencyCut:
    """The pool under the cap: a model above it leaves, a model without recorded latency stays (said)."""
    slow = tuple(m for m in pool if m in latency and latency[m] > max_latency)
    unknown = tuple(m for m in pool if m not in latency)
    return LatencyCut(tuple(m for m in pool if m not in slow), slow, unknown)


def too_slow_line(max_latency: float, cut: LatencyCut, latency: Mapping[str, float]) -> str:
    """Why nothing routes under the cap: every pool model's recorded latency is above it."""
    fastest = min(cut.slow, key=lambda m: latency[m])
    return (f"max latency {max_latency:g} s: every pool model's recorded median latency is above it (fastest: "
            f"{fastest} at {latency[fastest]:.3g} s); ask for a higher cap")
