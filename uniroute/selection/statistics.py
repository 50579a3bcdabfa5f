"""Paired statistics over trials."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np

log = logging.getLogger(__name__)

def sign_test(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> dict[str, float | int]:
    """Paired two-sided sign test of a against b: wins (a > b), losses, exact binomial p (ties dropped)."""
    from scipy.stats import binomtest

    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.shape != y.shape:
        raise ValueError(f"paired samples must have equal shapes, got {x.shape} and {y.shape}")
    wins, losses = int((x > y).sum()), int((x < y).sum())
    p = 1.0 if wins + losses == 0 else float(binomtest(wins, wins + losses, 0.5, alternative="two-sided").pvalue)
    return {"wins": wins, "losses": losses, "p": p}


def finite_mean(values: Sequence[float] | np.ndarray) -> float | None:
    arr = np.asarray(values, dtype=np.float64)
    arr = arr[np.isfinite(arr)]
    return float(arr.mean()) if arr.size else None
