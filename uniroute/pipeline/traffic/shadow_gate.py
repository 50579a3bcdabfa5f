"""The nightly build's shadow gate: before a build's router (the challenger) replaces the champion, both replay the
recent traffic (pipeline/traffic/replay.py) at the same expected spend, and the challenger is promoted only when it is
not significantly worse on expected quality there.

The champion replays at its default budget (what serving uses); its mean expected cost per prompt on the traffic is
the spend the challenger is held to: the challenger's lambda is the smallest whose mean expected cost on the same
prompts is within it (RoutingRule.lambda_for_target over the traffic's embeddings). Each router's expected score
comes from its own Psi, as every routed decision's expected_score does. The test is a one-sided paired z-test on the
per-prompt differences (challenger minus champion): the challenger is refused when p(worse) < alpha. It catches a
challenger whose evidence makes it buy less quality for the same spend on the prompts actually served (a model's
labels flipped, a cluster map fitted on another mix), which the validation comparison, an Area of the router kind
measured with the training LLMs on validation prompts, does not see.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta

import numpy as np

from uniroute import store
from uniroute.pipeline.pool import registry
from uniroute.pipeline.serving.route import resolved_setting
from uniroute.pipeline.traffic.replay import (
    ReplayError,
    ReplayRouter,
    ReplaySetting,
    ReplayWindow,
    checked_embedder,
    replayed_traffic,
    window_embeddings,
    with_logged_clusters,
)
from uniroute.pipeline.traffic.shadow_config import ShadowConfig
from uniroute.routers.serialize import AnyRouter

TEST = "one-sided paired z-test on per-prompt expected score (challenger - champion)"


@dataclass(frozen=True)
class ShadowGate:
    """The gate's verdict (pass, refuse or skipped), its one line and the comparison behind it."""

    verdict: str
    line: str
    window_days: float
    champion_id: str | None = None
    n_decisions: int = 0
    spend: float | None = None
    champion_score: float | None = None
    challenger_score: float | None = None
    difference: float | None = None
    difference_se: float | None = None
    p_worse: float | None = None
    test: str = TEST

    @property
    def refused(self) -> bool:
        return self.verdict == "refuse"

    def as_dict(self) -> dict:
        return asdict(self)


def paired_worse(diff: np.ndarray) -> tuple[float, float, float]:
    """(mean, standard error, one-sided p-value that the mean is this far below 0 by chance) of paired diffs."""
    mean = float(diff.mean())
    se = float(diff.std(ddof=1) / math.sqrt(diff.size)) if diff.size > 1 else 0.0
    if se == 0.0:
        return mean, se, 0.0 if mean < 0 else 1.0
    return mean, se, 0.5 * math.erfc(-(mean / se) / math.sqrt(2))


def _skipped(config: ShadowConfig, why: str, champion_id: str | None = None, n: int = 0) -> ShadowGate:
    return ShadowGate("skipped", f"shadow gate skipped: {why}", config.window_days, champion_id, n)


def _held_to(router: AnyRouter, pool: tuple[str, ...], X: np.ndarray, spend: float) -> float:
    """The smallest lambda at which the router's mean cost over X is within `spend` (its least, if it cannot)."""
    costs = router.costs[router.pool_indices(pool)]
    if spend >= float(costs.max()):
        return 0.0
    # An absolute mean cost, the same search budgets and --max-cost end in (no round trip through a budget fraction).
    lam = router.lambda_for_target(X, spend, pool)
    if lam is None:  # below its least reachable cost: its cheapest routing (a lambda past every switch)
        return float(1e6 / max(float(costs[costs > 0].min()), 1e-12))
    return float(lam)


def shadow_gate(con: store.Connection, challenger: AnyRouter, config: ShadowConfig,
                now: datetime | None = None) -> ShadowGate:
    """Replay the last config.window_days of traffic with the champion and `challenger` at the same expected spend
    (module docstring); skipped with a clear line without a champion, with too little traffic, or traffic embedded
    by another embedder."""
    champion_id = registry.champion_id(con)
    if not config.enabled:
        return _skipped(config, "switched off (UNIROUTE_SHADOW_GATE=false)", champion_id)
    if champion_id is None:
        return _skipped(config, "no champion to compare with")
    now = now or datetime.now(UTC).replace(tzinfo=None)
    window = ReplayWindow(since=now - timedelta(days=config.window_days))
    embedders = store.query(con, "replay_embedders", **window.params())
    n = int(embedders.n.sum()) if len(embedders) else 0
    if n < config.min_decisions:
        return _skipped(config, f"{n:,} decisions with embeddings in the last {config.window_days:g} days, "
                        f"{config.min_decisions:,} needed (UNIROUTE_SHADOW_MIN_DECISIONS)", champion_id, n)
    champion = registry.load_champion(con)
    active = set(store.query(con, "active_models").model)
    try:
        checked_embedder("challenger", challenger, embedders, who="the challenger (this build's router)")
        checked_embedder(champion_id, champion.router, embedders, who=f"the champion {champion_id}")
    except ReplayError as exc:
        return _skipped(config, f"the traffic cannot be replayed with both routers ({exc})", champion_id, n)
    records = embedders.router_id.dropna().unique().tolist()
    pools = [tuple(m for m in r.models if m in active) for r in (champion.router, challenger)]
    if not all(pools):
        return _skipped(config, "a router has no active model", champion_id, n)
    old = with_logged_clusters(con, ReplayRouter(champion_id, champion.router, pools[0], frozenset()), records)
    new = with_logged_clusters(con, ReplayRouter("challenger", challenger, pools[1], frozenset()), records)
    lam_old = float(resolved_setting(champion.router, pools[0], None, None)[0])  # type: ignore[arg-type]  # default
    try:
        served = replayed_traffic(con, old, window, ReplaySetting(lam=lam_old))
        spend = float(served.cost.mean())
        lam_new = _held_to(challenger, pools[1], window_embeddings(con, window), spend)
        shadow = replayed_traffic(con, new, window, ReplaySetting(lam=lam_new))
    except ReplayError as exc:  # what the window holds (records of two embedding sizes) must not stop a build
        return _skipped(config, f"the traffic cannot be replayed ({exc})", champion_id, n)
    if not np.array_equal(served.decision_id, shadow.decision_id):  # a decision landed between the two reads
        raise ReplayError("the traffic window changed while the shadow gate read it: run the build again")
    mean, se, p = paired_worse(shadow.score - served.score)
    refused = p < config.alpha
    verdict = "refuse" if refused else "pass"
    line = (f"shadow gate {'refused' if refused else 'passed'}: on {len(served):,} decisions of the last "
            f"{config.window_days:g} days at expected spend {spend:.6g} per prompt (challenger "
            f"{float(shadow.cost.mean()):.6g}), expected score {float(shadow.score.mean()):.4f} vs champion "
            f"{champion_id}'s {float(served.score.mean()):.4f} (difference {mean:+.4f}, se {se:.4f}, "
            f"p(worse) {p:.3g}, {TEST}, alpha {config.alpha:g})")
    return ShadowGate(verdict, line, config.window_days, champion_id, len(served), spend,
                      float(served.score.mean()), float(shadow.score.mean()), mean, se, p, f"{TEST}, alpha "
                      f"{config.alpha:g}")


def record_gate(con: store.Connection, build_router_id: str, gate: ShadowGate) -> None:
    """The gate's row in `shadow_gates` (in the build's transaction)."""
    store.execute(con, "shadow_gate_insert", build_router_id=build_router_id,
                  created_at=datetime.now(UTC).replace(tzinfo=None),
                  **{k: v for k, v in gate.as_dict().items()})
