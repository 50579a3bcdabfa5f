"""The shadow gate's settings as a plain value (pipeline/traffic/shadow_gate.py), light enough for every operation's
context."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ShadowConfig:
    """The gate's settings (UNIROUTE_SHADOW_*): the traffic window, the least traffic worth a verdict, alpha."""

    window_days: float = 7.0
    min_decisions: int = 200
    alpha: float = 0.01
    enabled: bool = True
