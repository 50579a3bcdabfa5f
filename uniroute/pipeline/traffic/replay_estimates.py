"""What a replay says (pipeline/traffic/replay.py): per model its share of the traffic, expected quality and cost with
95% intervals and the difference from what was served; where outcomes came back, how far the served expectations and
the realised scores agreed, and the replayed policy's realised quality three ways.

Estimators of the replayed (deterministic) policy pi on the n decisions with an outcome, logged model a_i served
with probability p_i (the logged propensity, 1 without exploration), realised score r_i, q(x, m) the replay
router's expected score:
- direct:  mean of q(x_i, pi(x_i))  (the Psi model alone; biased as far as Psi is off);
- IPW:     mean of 1[a_i = pi(x_i)] r_i / p_i  (unbiased when every pick had a chance of being logged);
- DR:      mean of q(x_i, pi(x_i)) + 1[a_i = pi(x_i)] (r_i - q(x_i, a_i)) / p_i  (unbiased if either part is).
Each interval is the mean's normal 95% interval over the per-decision terms; a share's is Wilson's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

Z95 = 1.959963984540054


@dataclass(frozen=True, eq=False)
class ReplayedTraffic:
    """Per replayed decision (n,), what was served and what the replay chooses; model indices into `models`."""

    models: tuple[str, ...]  # the replay router's models, then any served model it lacks
    decision_id: np.ndarray  # (n,) object
    decided_at: np.ndarray  # (n,) datetime64
    served: np.ndarray  # (n,) int32: the logged model
    served_score: np.ndarray  # (n,) its logged expected score
    served_cost: np.ndarray  # (n,) its logged expected cost
    propensity: np.ndarray  # (n,) the probability the logged model had of being served
    explored: np.ndarray  # (n,) bool
    outcome: np.ndarray  # (n,) realised score, NaN without an outcome
    chosen: np.ndarray  # (n,) int32: the replay's choice
    score: np.ndarray  # (n,) its expected score (the replay router's Psi)
    score_lo: np.ndarray  # (n,) 95% interval of it from the Psi cells' evidence (NaN when the router keeps none)
    score_hi: np.ndarray
    cost: np.ndarray  # (n,) its cost per prompt (the replay router's costs, repriced)
    served_by_replay: np.ndarray  # (n,) the replay router's expected score of the logged model (NaN: not in pool)
    lam: np.ndarray  # (n,) the lambda each decision was replayed at

    def __len__(self) -> int:
        return len(self.decision_id)


def mean_interval(values: np.ndarray) -> dict:
    """{"mean", "lo", "hi", "n"}: the mean and its normal 95% interval (None when there is nothing)."""
    values = np.asarray(values, dtype=float)
    n = int(values.size)
    if n == 0:
        return {"mean": None, "lo": None, "hi": None, "n": 0}
    mean = float(values.mean())
    half = Z95 * float(values.std(ddof=1)) / math.sqrt(n) if n > 1 else float("nan")
    return {"mean": mean, "lo": mean - half, "hi": mean + half, "n": n}


def wilson(count: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) 95% Wilson interval of count / n, elementwise."""
    p = np.asarray(count, dtype=float) / n
    denom = 1 + Z95**2 / n
    centre = (p + Z95**2 / (2 * n)) / denom
    half = Z95 * np.sqrt(p * (1 - p) / n + Z95**2 / (4 * n * n)) / denom
    return centre - half, centre + half


def per_model(t: ReplayedTraffic) -> pd.DataFrame:
    """One row per model that was served or is chosen: replayed share (95% Wilson interval), served share and the
    difference; the expected score of the prompts it gets (95% interval: the mean of its Psi cells' intervals where
    the router keeps their evidence, else the mean's over prompts) and its cost per prompt; its share of the spend."""
    n, m = len(t), len(t.models)
    chosen = np.bincount(t.chosen, minlength=m)
    served = np.bincount(t.served, minlength=m)
    lo, hi = wilson(chosen, n)
    spend = float(t.cost.sum())
    rows = []
    for i, name in enumerate(t.models):
        if chosen[i] == 0 and served[i] == 0:
            continue
        mine = t.chosen == i
        score = mean_interval(t.score[mine])
        kept = mine & np.isfinite(t.score_lo)
        if kept.any() and kept.sum() == mine.sum():
            score["lo"], score["hi"] = float(t.score_lo[mine].mean()), float(t.score_hi[mine].mean())
        served_mine = t.served == i
        rows.append({
            "model": name, "share": chosen[i] / n, "share_lo": float(lo[i]), "share_hi": float(hi[i]),
            "served_share": served[i] / n, "share_diff": (chosen[i] - served[i]) / n,
            "expected_score": score["mean"], "score_lo": score["lo"], "score_hi": score["hi"],
            "served_expected_score": float(t.served_score[served_mine].mean()) if served[i] else None,
            "cost_per_prompt": float(t.cost[mine][0]) if chosen[i] else None,
            "spend_share": float(t.cost[mine].sum() / spend) if spend > 0 else None,
        })
    return pd.DataFrame(rows).sort_values(["share", "served_share"], ascending=False).reset_index(drop=True)


def overall(t: ReplayedTraffic) -> dict:
    """The replayed policy's mean expected score and cost per prompt, the served ones, and the paired
    differences (replayed minus served), each with its 95% interval; how many decisions changed model."""
    return {
        "decisions": len(t),
        "changed": int((t.chosen != t.served).sum()),
        "explored": int(t.explored.sum()),
        "expected_score": mean_interval(t.score),
        "expected_cost": mean_interval(t.cost),
        "served_expected_score": mean_interval(t.served_score),
        "served_expected_cost": mean_interval(t.served_cost),
        "score_difference": mean_interval(t.score - t.served_score),
        "cost_difference": mean_interval(t.cost - t.served_cost),
    }


def with_outcomes(t: ReplayedTraffic) -> dict | None:
    """Where outcomes came back (None: none did): agreement of the served expectation with the realised score,
    and the replayed policy's realised quality by the direct, IPW and doubly robust estimators (module doc)."""
    seen = np.isfinite(t.outcome)
    if not seen.any():
        return None
    r, p = t.outcome[seen], t.propensity[seen]
    q_pi, q_a = t.score[seen], t.served_by_replay[seen]
    match = (t.chosen[seen] == t.served[seen]).astype(float)
    gap = t.served_score[seen] - r
    correction = np.where(match > 0, (r - np.nan_to_num(q_a)) / p, 0.0)
    expected = t.served_score[seen]
    corr = (float(np.corrcoef(expected, r)[0, 1]) if seen.sum() > 2 and expected.std() > 0 and r.std() > 0
            else None)
    return {
        "decisions": int(seen.sum()),
        "agreement": {
            "expected": mean_interval(expected), "realised": mean_interval(r),
            "expected_minus_realised": mean_interval(gap), "mean_absolute_gap": float(np.abs(gap).mean()),
            "correlation": corr,
        },
        "matched": int(match.sum()),
        "direct": mean_interval(q_pi),
        "ipw": mean_interval(match * r / p),
        "doubly_robust": mean_interval(q_pi + correction),
    }


def _fmt(value: object, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def _interval(d: dict, digits: int = 4) -> str:
    return f"{_fmt(d['mean'], digits)} [{_fmt(d['lo'], digits)}, {_fmt(d['hi'], digits)}]"


def markdown(result: dict) -> str:
    """The replay as Markdown: what was replayed, the totals, the per-model table and the outcome estimates."""
    o = result["overall"]
    lines = [
        f"# Replay of {result['window']} with router {result['router_id']}",
        "",
        f"{o['decisions']:,} decisions ({result['first']} to {result['last']}), pool {', '.join(result['pool'])}, "
        f"{result['setting']}; {o['changed']:,} would change model.",
        "",
        "| | replayed | served | difference |",
        "|---|---|---|---|",
        f"| expected score | {_interval(o['expected_score'])} | {_interval(o['served_expected_score'])} | "
        f"{_interval(o['score_difference'])} |",
        f"| expected cost per prompt | {_interval(o['expected_cost'], 6)} | {_interval(o['served_expected_cost'], 6)} "
        f"| {_interval(o['cost_difference'], 6)} |",
        "",
        "| model | share [95%] | served share | difference | expected score [95%] | cost per prompt | spend share |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in result["models"]:
        lines.append(
            f"| {r['model']} | {_fmt(r['share'], 3)} [{_fmt(r['share_lo'], 3)}, {_fmt(r['share_hi'], 3)}] | "
            f"{_fmt(r['served_share'], 3)} | {r['share_diff']:+.3f} | {_fmt(r['expected_score'])} "
            f"[{_fmt(r['score_lo'])}, {_fmt(r['score_hi'])}] | {_fmt(r['cost_per_prompt'], 6)} | "
            f"{_fmt(r['spend_share'], 3)} |")
    out = result.get("outcomes")
    if out is None:
        lines += ["", "No outcome came back for these decisions: realised quality cannot be estimated."]
        return "\n".join(lines) + "\n"
    a = out["agreement"]
    lines += [
        "",
        f"Outcomes for {out['decisions']:,} decisions: served expected {_interval(a['expected'])}, realised "
        f"{_interval(a['realised'])}, expected minus realised {_interval(a['expected_minus_realised'])} "
        f"(mean absolute gap {_fmt(a['mean_absolute_gap'])}, correlation {_fmt(a['correlation'], 3)}).",
        "",
        f"Replayed policy's realised score ({out['matched']:,} decisions where the replay picks the served model):",
        "",
        "| estimator | score [95%] |",
        "|---|---|",
        f"| direct (Psi) | {_interval(out['direct'])} |",
        f"| inverse-propensity weighted | {_interval(out['ipw'])} |",
        f"| doubly robust | {_interval(out['doubly_robust'])} |",
    ]
    return "\n".join(lines) + "\n"
