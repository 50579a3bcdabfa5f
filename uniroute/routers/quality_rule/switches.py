"""Quality-only routing (no costs, or all costs equal): the best model overall, except in the clusters where
another model's advantage over it is significant on the validation prompts.

Why not route by Psi alone: with every cost equal, the cluster router sends each prompt to the model of least
mean validation loss in its cluster. A cluster holds a handful of validation prompts, so that argmin mostly
picks up noise: a model one lucky answer ahead in a cluster takes it, and on the test prompts it is usually
worse than the model that is best overall (whose overall mean rests on every validation prompt). The rule keeps
the overall best (least mean validation loss, ties: the first) and moves a cluster to another model only when
that model beats the overall best there by a paired one-sided sign test on the cluster's validation prompts
(the prompts both answered; a "win" is a strictly smaller loss, ties dropped, exact binomial). The test is run
against each other model of the pool, so its level is Bonferroni-corrected over those M - 1 comparisons: a false
switch costs quality, a missed one only leaves the cluster at the overall best. Among the significant models the
one of least mean loss in the cluster takes it.

The served kind (`quality_rule`, routers/quality_rule/kind.py) now decides by empirical Bayes instead
(routers/quality_rule/empirical_bayes.py, which returns the same QualityRule): these sign tests missed RouterDC's domain
specialists at ~50 prompts a cluster. They stay as the evaluation method `quality_rule_raw` (uncorrected) beside it.

Shapes: n_val validation prompts, M models, K clusters.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

log = logging.getLogger(__name__)

DEFAULT_ALPHA = 0.05  # family-wise level per cluster (over the M - 1 challengers of the overall best)


@dataclass(frozen=True, eq=False)
class QualityRule:
    """The model each cluster routes to, and which clusters left the overall best (significant advantage)."""

    best: int  # column of the overall best model (least mean validation loss)
    choice: np.ndarray  # (K,) model column per cluster
    p_values: np.ndarray  # (K,) one-sided p of the chosen challenger (1.0: kept the best; NaN: no test was run)

    @property
    def switched(self) -> np.ndarray:
        """(K,) whether the cluster left the overall best."""
        return self.choice != self.best

    def routed(self, clusters: np.ndarray) -> np.ndarray:
        """(n,) model column each prompt of these clusters is sent to."""
        return self.choice[np.asarray(clusters, dtype=np.int64)]


def one_sided_sign_p(challenger: np.ndarray, incumbent: np.ndarray) -> float:
    """P of at least this many strict wins of the challenger (smaller loss) among the non-tied pairs under p = 1/2."""
    both = ~(np.isnan(challenger) | np.isnan(incumbent))
    wins = int((challenger[both] < incumbent[both]).sum())
    losses = int((challenger[both] > incumbent[both]).sum())
    if wins + losses == 0:
        return 1.0
    from scipy.stats import binomtest  # here, not at the top: every router load registers this kind (a second)

    return float(binomtest(wins, wins + losses, 0.5, alternative="greater").pvalue)


def fit_quality_rule(val_clusters: np.ndarray, val_losses: np.ndarray, k: int,
                     alpha: float = DEFAULT_ALPHA, bonferroni: bool = True) -> QualityRule:
    """The rule from the validation prompts' clusters (n_val,) and the pool's losses on them (n_val, M; NaN: no label).

    bonferroni=False tests each challenger at alpha itself (more switches, more of them false): measured beside
    the corrected rule, see docs/results/quality_only.md."""
    val_clusters = np.asarray(val_clusters, dtype=np.int64)
    val_losses = np.asarray(val_losses, dtype=np.float64)
    if val_losses.ndim != 2 or val_losses.shape[0] != val_clusters.shape[0]:
        raise ValueError(f"{val_clusters.shape[0]} cluster labels for validation losses of shape {val_losses.shape}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    m = val_losses.shape[1]
    if (~np.isnan(val_losses)).sum(axis=0).min(initial=1) == 0:
        raise ValueError("every model needs at least one validation label for the quality-only rule")
    means = np.nanmean(val_losses, axis=0)
    best = int(np.argmin(means))
    level = alpha / max(1, m - 1) if bonferroni else alpha
    choice = np.full(k, best, dtype=np.int64)
    p_values = np.ones(k, dtype=np.float64)
    for c in range(k):
        rows = val_losses[val_clusters == c]
        if rows.shape[0] == 0:
            continue
        ps = np.array([1.0 if j == best else one_sided_sign_p(rows[:, j], rows[:, best]) for j in range(m)])
        significant = np.flatnonzero(ps <= level)
        if significant.size:
            cell = np.nanmean(rows[:, significant], axis=0)
            j = int(significant[np.argmin(cell)])
            choice[c], p_values[c] = j, ps[j]
    return QualityRule(best=best, choice=choice, p_values=p_values)


def rule_gamma(rule: QualityRule, clusters: np.ndarray, m: int, fallback: np.ndarray | None = None) -> np.ndarray:
    """(n, M) gamma of the rule for prompts in these clusters: 0 for the routed model, 1 for every other.

    With equal costs every lambda then sends each prompt to its cluster's model (one point on the curve).
    fallback (M,), e.g. the models' mean validation losses, orders the others (1 + fallback): where the routed
    model is left out of a pool (the selection's bootstrap resamples the LLMs) the prompt goes to the best of the
    rest, not to whichever column comes first."""
    extra = np.zeros(m) if fallback is None else np.nan_to_num(np.asarray(fallback, dtype=np.float64), nan=1.0)
    gamma = np.broadcast_to(1.0 + extra, (len(clusters), m)).copy()
    gamma[np.arange(len(clusters)), rule.routed(clusters)] = 0.0
    return gamma


FLOOR_STEP = 1e-6  # how far above the routed cell the rule holds every other model's cell (and orders them)


def rule_floor(rule: QualityRule, routing_psi: np.ndarray, means: np.ndarray) -> np.ndarray:
    """(M, K) the floor (routers.router.Router.psi_floor) under which a cluster router routes like the rule.

    Every model but the cluster's routed one is held at least FLOOR_STEP (times its rank by mean validation loss,
    `means` (M,)) above the routed model's routing cell, so the argmin at equal costs is the rule's model and,
    where a request's pool leaves it out, the models come in their overall order unless their own cells are
    higher. Clipped to 1: in a cluster whose routed model missed every validation prompt they tie with it."""
    m, k = routing_psi.shape
    rank = np.empty(m)
    rank[np.argsort(np.nan_to_num(np.asarray(means, dtype=np.float64), nan=1.0), kind="stable")] = np.arange(m)
    routed = routing_psi[rule.choice, np.arange(k)]  # (K,)
    floor = np.clip(routed[None, :] + FLOOR_STEP * (1.0 + rank[:, None]), 0.0, 1.0)
    floor[rule.choice, np.arange(k)] = 0.0
    return floor
