"""Bradley-Terry strengths per prompt cluster from pairwise preferences (paper: the Chatbot Arena experiment).

Shapes: M models, K clusters (or K neighbourhoods). A battle between models a and b has an outcome y in [0, 1]
for a: 1 a won, 0 b won, 0.5 a tie of either kind (the Chatbot Arena convention counts a tie, "tie" or
"tie (bothbad)", as half a win for each side), or a judge's probability that a's answer is better. Everything
the fit needs is in `BattleCounts`: n (K, M, M) battles between each pair (symmetric) and w (K, M, M) the
summed outcome of the row model against the column model (w + w.T == n).

Model: P(a preferred to b on a prompt of cluster k) = sigmoid(theta[k, a] - theta[k, b]).
Fit (regularised maximum likelihood, Newton steps):
  1. overall strengths t (M,): one theta per model shared by every cluster, with a weak ridge toward 0;
  2. per-cluster strengths theta (K, M): a ridge of weight `prior` pulls each model toward its overall strength,
     so a model with few battles in a cluster stays near t (with none there it equals t).
Models may be *anchors* whose per-cluster strengths are given and kept fixed (onboarding a new LLM against the
existing pool without refitting it, or pairwise-only LLMs beside LLMs measured pointwise); the others are free.

Quality: sigmoid(theta), the probability of being preferred to an opponent of strength 0. Without anchors the
ridges put the mean strength of every cluster at exactly 0, so this is the win probability against a model of
the pool's average strength there. Anchors measured pointwise enter as theta = logit(accuracy): for answers
graded right/wrong independently, a decisive battle is won with probability s_a / (s_a + s_b), s = accuracy
odds, which is exactly Bradley-Terry with those strengths (ties counted as halves pull an estimate a little
toward its opponents).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

log = logging.getLogger(__name__)

# Ridge weight of the per-cluster strengths toward the overall one: one unit of Fisher information, what about
# four evenly matched battles carry (each adds p (1 - p) = 1/4).
DEFAULT_PRIOR = 1.0
# Weak ridge of the overall strengths toward 0: fixes Bradley-Terry's free shift and keeps a model that won or
# lost every battle finite (the equivalent of 1/25 of an evenly matched battle).
OVERALL_PRIOR = 0.01
ANCHOR_CLIP = 1e-3  # anchors' accuracies are clipped to [eps, 1 - eps] before the logit
MAX_STEP = 2.0  # largest Newton step per coordinate (logit units): keeps far-off starts from overshooting
TOLERANCE = 1e-9
MAX_ITERATIONS = 200


@dataclass(frozen=True, eq=False)
class BattleCounts:
    """Sufficient statistics of battles, per cluster and ordered pair of models."""

    models: tuple[str, ...]
    n: np.ndarray  # (K, M, M) float64 battles between a and b, symmetric, zero diagonal
    w: np.ndarray  # (K, M, M) float64 summed outcome of a against b; w + w.T == n

    @property
    def k(self) -> int:
        """Number of clusters K."""
        return int(self.n.shape[0])

    def battles_per_model(self) -> np.ndarray:
        """(K, M) battles each model fought in each cluster."""
        return self.n.sum(axis=2)


@dataclass(frozen=True, eq=False)
class Strengths:
    """Fitted Bradley-Terry strengths; anchors keep the strengths they were given."""

    models: tuple[str, ...]
    overall: np.ndarray  # (M,) shared strength (anchors: NaN, they have per-cluster strengths only)
    theta: np.ndarray  # (K, M) per-cluster strength
    battles: np.ndarray  # (K, M) battles behind each cell
    anchors: tuple[str, ...] = ()

    def quality(self) -> np.ndarray:
        """(M, K) probability of being preferred to an opponent of strength 0 in each cluster."""
        return 1.0 / (1.0 + np.exp(-self.theta.T))


def battle_counts(
    a: np.ndarray, b: np.ndarray, y: np.ndarray, cluster: np.ndarray, k: int, models: Sequence[str]
) -> BattleCounts:
    """Counts from battles given as (B,) model indices a and b, outcomes y for a, and cluster ids."""
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    y, cluster = np.asarray(y, dtype=np.float64), np.asarray(cluster, dtype=np.int64)
    m = len(models)
    if not (a.shape == b.shape == y.shape == cluster.shape) or a.ndim != 1:
        raise ValueError(f"battle arrays must share one (B,) shape: {a.shape}, {b.shape}, {y.shape}, {cluster.shape}")
    if len(a) and (min(a.min(), b.min()) < 0 or max(a.max(), b.max()) >= m):
        raise ValueError(f"model indices must lie in [0, {m})")
    if len(a) and (cluster.min() < 0 or cluster.max() >= k):
        raise ValueError(f"cluster ids must lie in [0, {k}), got [{cluster.min()}, {cluster.max()}]")
    if np.any(a == b):
        raise ValueError(f"a model cannot battle itself (battle {int(np.flatnonzero(a == b)[0])})")
    if not np.all((y >= 0) & (y <= 1)):
        raise ValueError("battle outcomes must lie in [0, 1]")
    n = np.zeros((k, m, m))
    w = np.zeros((k, m, m))
    np.add.at(n, (cluster, a, b), 1.0)
    np.add.at(n, (cluster, b, a), 1.0)
    np.add.at(w, (cluster, a, b), y)
    np.add.at(w, (cluster, b, a), 1.0 - y)
    return BattleCounts(tuple(models), n, w)


def counts_from_pairs(
    cluster: np.ndarray, a: np.ndarray, b: np.ndarray, n: np.ndarray, w: np.ndarray, k: int, models: Sequence[str]
) -> BattleCounts:
    """Counts from aggregated rows (cluster, a, b, battles n, summed outcome w of a), e.g. a SQL group-by."""
    m = len(models)
    nn = np.zeros((k, m, m))
    ww = np.zeros((k, m, m))
    cluster, a, b = (np.asarray(v, dtype=np.int64) for v in (cluster, a, b))
    n, w = np.asarray(n, dtype=np.float64), np.asarray(w, dtype=np.float64)
    np.add.at(nn, (cluster, a, b), n)
    np.add.at(nn, (cluster, b, a), n)
    np.add.at(ww, (cluster, a, b), w)
    np.add.at(ww, (cluster, b, a), n - w)
    return BattleCounts(tuple(models), nn, ww)


def _gradient_and_information(theta: np.ndarray, counts: BattleCounts) -> tuple[np.ndarray, np.ndarray]:
    """Log-likelihood gradient (K, M) and Fisher information (K, M, M) at per-cluster strengths theta (K, M)."""
    diff = theta[:, :, None] - theta[:, None, :]
    p = 1.0 / (1.0 + np.exp(-diff))  # (K, M, M) P(row preferred to column)
    gradient = (counts.w - counts.n * p).sum(axis=2)
    weight = counts.n * p * (1.0 - p)
    information = -weight
    idx = np.arange(theta.shape[1])
    information[:, idx, idx] = weight.sum(axis=2)
    return gradient, information


def _clipped(step: np.ndarray) -> np.ndarray:
    return np.clip(step, -MAX_STEP, MAX_STEP)


def _fit_overall(counts: BattleCounts, free: np.ndarray, anchor_theta: np.ndarray) -> np.ndarray:
    """(F,) overall strengths of the free models against anchors at their per-cluster strengths (K, M)."""
    theta = anchor_theta.copy()
    t = np.zeros(len(free))
    for _ in range(MAX_ITERATIONS):
        theta[:, free] = t
        gradient, information = _gradient_and_information(theta, counts)
        g = gradient[:, free].sum(axis=0) - OVERALL_PRIOR * t
        h = information[:, free][:, :, free].sum(axis=0) + OVERALL_PRIOR * np.eye(len(free))
        step = _clipped(np.linalg.solve(h, g))
        t = t + step
        if np.abs(step).max(initial=0.0) < TOLERANCE:
            break
    else:
        log.warning("Bradley-Terry overall strengths: no convergence in %d Newton steps", MAX_ITERATIONS)
    return t


def _fit_clusters(
    counts: BattleCounts, free: np.ndarray, anchor_theta: np.ndarray, overall: np.ndarray, prior: float
) -> np.ndarray:
    """(K, M) strengths: anchors as given, free models per cluster with a ridge toward their overall strength."""
    theta = anchor_theta.copy()
    theta[:, free] = overall
    eye = prior * np.eye(len(free))
    for _ in range(MAX_ITERATIONS):
        gradient, information = _gradient_and_information(theta, counts)
        g = gradient[:, free] - prior * (theta[:, free] - overall)
        h = information[:, free][:, :, free] + eye
        step = _clipped(np.linalg.solve(h, g[:, :, None])[:, :, 0])
        theta[:, free] += step
        if np.abs(step).max(initial=0.0) < TOLERANCE:
            break
    else:
        log.warning("Bradley-Terry per-cluster strengths: no convergence in %d Newton steps", MAX_ITERATIONS)
    return theta


def fit_strengths(
    counts: BattleCounts, anchors: dict[str, np.ndarray] | None = None, prior: float = DEFAULT_PRIOR,
    overall: np.ndarray | None = None,
) -> Strengths:
    """Regularised per-cluster Bradley-Terry strengths; `anchors` maps model -> (K,) fixed strengths.

    overall: (M,) strengths to tie the clusters to, when the clusters do not partition the battles (K-NN
    neighbourhoods overlap, so their pooled counts are not the battles); default: fitted on the pooled counts.
    """
    anchors = anchors or {}
    if not prior > 0:
        raise ValueError(f"prior must be > 0 (it ties sparse clusters to the overall strength), got {prior}")
    unknown = sorted(set(anchors) - set(counts.models))
    if unknown:
        raise ValueError(f"anchors {unknown} are not among the battle models")
    m, k = len(counts.models), counts.k
    anchor_theta = np.zeros((k, m))
    for name, values in anchors.items():
        values = np.asarray(values, dtype=np.float64)
        if values.shape != (k,) or not np.all(np.isfinite(values)):
            raise ValueError(f"anchor {name!r} needs {k} finite strengths, got shape {values.shape}")
        anchor_theta[:, counts.models.index(name)] = values
    free = np.array([i for i, name in enumerate(counts.models) if name not in anchors], dtype=np.int64)
    given = overall
    overall = np.full(m, np.nan)
    theta = anchor_theta
    if len(free):
        overall[free] = _fit_overall(counts, free, anchor_theta) if given is None else np.asarray(given)[free]
        theta = _fit_clusters(counts, free, anchor_theta, overall[free], prior)
    return Strengths(counts.models, overall, theta, counts.battles_per_model(), tuple(sorted(anchors)))


def anchor_strengths(accuracy: np.ndarray) -> np.ndarray:
    """Strengths logit(accuracy) of models measured pointwise (accuracy = 1 - Psi), clipped away from 0 and 1."""
    q = np.clip(np.asarray(accuracy, dtype=np.float64), ANCHOR_CLIP, 1.0 - ANCHOR_CLIP)
    return np.log(q) - np.log1p(-q)


def log_likelihood(theta: np.ndarray, counts: BattleCounts) -> float:
    """Mean log-likelihood per battle of counts under per-cluster strengths theta (K, M) (held-out scoring)."""
    diff = theta[:, :, None] - theta[:, None, :]
    log_p = -np.logaddexp(0.0, -diff)  # log sigmoid, stable
    # Each battle sits in cells (a, b) and (b, a): summing w log p over ordered pairs counts both of its sides.
    battles = counts.n.sum() / 2.0
    return float((counts.w * log_p).sum()) / battles if battles else float("nan")
