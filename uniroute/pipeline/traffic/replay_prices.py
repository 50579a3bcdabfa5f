"""Prices by date for a replay (`replay --prices`): which per-call prices are in force at each decision's time."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

import numpy as np


@dataclass(frozen=True)
class PriceSchedule:
    """Per-call prices by the day they hold from (`replay --prices`): a decision is replayed at the prices in force
    when it was decided, so a price dated later (next month's, or 2099's) never prices today's or older traffic; a
    decision older than every price in the file keeps the router's own costs."""

    prices: tuple[tuple[date, str, float], ...] = ()  # (valid from, model, cost per call)

    @property
    def days(self) -> np.ndarray:
        """The distinct days a price changes, oldest first, as datetime64 (midnight, UTC like decided_at)."""
        return np.array(sorted({p[0] for p in self.prices}), dtype="datetime64[ns]")

    def periods(self, decided_at: np.ndarray) -> np.ndarray:
        """(n,) per decision the number of change days at or before its time: 0 before any, i from days[i-1]."""
        return np.searchsorted(self.days, decided_at.astype("datetime64[ns]"), side="right")

    def in_force(self, period: int) -> dict[str, float]:
        """{model: per-call price} in force in a period (the newest per model from on or before its day)."""
        if period == 0:
            return {}
        day = self.days[period - 1]
        out: dict[str, float] = {}
        for valid_from, model, per_call in sorted(self.prices):
            if np.datetime64(valid_from, "ns") <= day:
                out[model] = per_call
        return out
