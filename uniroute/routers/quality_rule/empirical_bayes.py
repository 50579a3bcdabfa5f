"""The quality-only rule's per-cluster decision by empirical Bayes: switch a cluster away from the overall best
model only as far as the pool's own validation answers say per-cluster differences are real.

Why (docs/results/quality_only.md, docs/decisions/0002-auto-rule.md): at equal costs every cluster router sends a
cluster to the model of least estimated loss there. Which is better, the per-cluster argmin (K-means) or the overall
best everywhere, depends on the pool: where one LLM dominates (RouterBench with GPT-4 among the served LLMs) most
cluster "wins" of another LLM are noise; where LLMs specialise (RouterDC: a math model, a code model) they are real. The
kind is chosen on the training LLMs (simulated onboarding), a different pool: on RouterBench validation said K-means
beat the rule by 0.007 while on the test LLMs the rule beat K-means by 0.005. And the count-aware shrinkage cannot help
at equal costs: every model answered the same validation prompts, so shrinking each cluster's cells toward the pool
prior with one strength leaves their order, hence the argmin, unchanged; its strength is tuned on the training pool
anyway (0 in 85 of 100 RouterBench trials).

So the decision is made from the served pool's own answers. Each cell (model m, cluster k) is shrunk toward the
pool prior (routers.cluster.psi.pool_prior: the cluster's pool loss plus the model's overall lead, an additive model
whose argmin in every cluster is the overall best) with the strength s = sigma^2 / tau^2 of a normal hierarchical
model: sigma^2 the per-answer variance of a loss within a cell, tau^2 the variance of the true cells around the
additive prior, estimated by moments from the measured cells (their squared residuals, corrected for the
(M-1)(K-1)/(MK) degrees of freedom the additive fit takes, minus their sampling variance). Where the residuals
are no larger than noise (tau^2 <= 0) every cluster keeps the overall best; where specialists are real, s is
small and the cluster argmin (K-means') stands. No level or strength is tuned, on the test LLMs or anywhere.

Shapes: n_val validation prompts, M models, K clusters.
"""

from __future__ import annotations

import logging
import math

import numpy as np

from uniroute.routers.cluster.psi import pool_prior
from uniroute.routers.quality_rule.switches import QualityRule

log = logging.getLogger(__name__)


def cell_moments(val_clusters: np.ndarray, val_losses: np.ndarray, k: int) -> tuple[np.ndarray, ...]:
    """(M, K) mean loss, count and within-cell sample variance (ddof 1; 0 below two answers) per model and cluster."""
    known = ~np.isnan(val_losses)
    filled = np.where(known, val_losses, 0.0)
    onehot = np.zeros((val_clusters.shape[0], k))
    onehot[np.arange(val_clusters.shape[0]), val_clusters] = 1.0
    counts = (onehot.T @ known).T  # (M, K)
    sums = (onehot.T @ filled).T
    squares = (onehot.T @ filled**2).T
    means = np.where(counts > 0, sums / np.maximum(counts, 1), 0.0)
    var = np.where(counts > 1, (squares - counts * means**2) / np.maximum(counts - 1, 1), 0.0)
    return means, counts, np.clip(var, 0.0, None)


def eb_strength(means: np.ndarray, counts: np.ndarray, var: np.ndarray) -> float:
    """s = sigma^2 / tau^2 around the additive prior (inf where the cells do not vary beyond their noise)."""
    m, k = means.shape
    if m < 2 or k < 2:
        return math.inf
    dof = (m - 1) * (k - 1) / (m * k)  # share of a cell's spread the additive fit leaves in its residual
    return _residual_strength(means, counts, var, pool_prior(means, counts), dof)


def _posterior(means: np.ndarray, counts: np.ndarray, prior: np.ndarray, s: float) -> np.ndarray:
    """(M, K) cells shrunk toward the prior with strength s (the prior itself where s is inf or a cell is empty)."""
    if not math.isfinite(s):
        return prior.copy()
    return np.where(counts > 0, (counts * means + s * prior) / np.maximum(counts + s, 1e-300), prior)


def _residual_strength(means: np.ndarray, counts: np.ndarray, var: np.ndarray, prior: np.ndarray,
                       dof: float) -> float:
    """s = sigma^2 / tau^2 of cells around a prior: tau^2 by moments (mean squared residual / dof minus the cells'
    sampling variance), inf where the residuals are no larger than that noise."""
    seen = counts >= 2
    if not seen.any() or dof <= 0:
        return math.inf
    tau2 = float(((means - prior) ** 2)[seen].mean() / dof - (var / np.maximum(counts, 1))[seen].mean())
    sigma2 = float(var[seen].mean())
    if tau2 <= 0:
        return math.inf
    return sigma2 / tau2 if sigma2 > 0 else 0.0


def eb_cells(val_clusters: np.ndarray, val_losses: np.ndarray, k: int, coarse: np.ndarray | None = None,
             k_coarse: int = 1) -> tuple[np.ndarray, np.ndarray, float]:
    """(M, K) empirical-Bayes cells on the K clusters, (M, K) counts, and the fine level's strength.

    With `coarse` (n_val,) cluster labels of a coarser clustering (K-means' own K), two levels: the coarse cells
    are shrunk toward the additive prior, and each fine cell toward the coarse cell of the coarse cluster most of
    its validation prompts fall in, each level with its own strength. Why two levels: a specialist's advantage is
    usually a domain's (RouterDC: math, code), which the coarse clusters measure on hundreds of prompts each; the
    fine clusters (about 50 prompts) see it through noise, and one strength over all fine cells, most of which
    show no specialist, shrinks it away (one level at the rule's K left RouterDC's K-means gain on the table)."""
    means, counts, var = cell_moments(val_clusters, val_losses, k)
    if coarse is None or k_coarse < 2:
        s = eb_strength(means, counts, var)
        return _posterior(means, counts, pool_prior(means, counts), s), counts, s
    coarse = np.asarray(coarse, dtype=np.int64)
    c_means, c_counts, c_var = cell_moments(coarse, val_losses, k_coarse)
    c_cells = _posterior(c_means, c_counts, pool_prior(c_means, c_counts), eb_strength(c_means, c_counts, c_var))
    parent = np.zeros(k, dtype=np.int64)
    for c in range(k):
        labels = coarse[val_clusters == c]
        if labels.size:
            parent[c] = int(np.bincount(labels, minlength=k_coarse).argmax())
    prior = c_cells[:, parent]  # (M, K)
    # the coarse cell each fine residual is taken from was measured partly on the same prompts: a fine cluster
    # inside a coarse one keeps about 1 - K_c / K of its spread around it
    s = _residual_strength(means, counts, var, prior, 1.0 - k_coarse / k)
    return _posterior(means, counts, prior, s), counts, s


def fit_eb_rule(val_clusters: np.ndarray, val_losses: np.ndarray, k: int, coarse: np.ndarray | None = None,
                k_coarse: int = 1) -> QualityRule:
    """The rule from the validation prompts' clusters (n_val,) and the pool's losses on them (n_val, M; NaN: none),
    optionally over a coarser clustering's labels (eb_cells).

    Each cluster goes to the model of least empirical-Bayes cell (ties and empty clusters: the overall best, least
    mean validation loss). No test is run, so p_values is NaN; the fine level's strength is eb_cells' (logged)."""
    val_clusters = np.asarray(val_clusters, dtype=np.int64)
    val_losses = np.asarray(val_losses, dtype=np.float64)
    if val_losses.ndim != 2 or val_losses.shape[0] != val_clusters.shape[0]:
        raise ValueError(f"{val_clusters.shape[0]} cluster labels for validation losses of shape {val_losses.shape}")
    if (~np.isnan(val_losses)).sum(axis=0).min(initial=1) == 0:
        raise ValueError("every model needs at least one validation label for the quality-only rule")
    best = int(np.argmin(np.nanmean(val_losses, axis=0)))
    cells, counts, s = eb_cells(val_clusters, val_losses, k, coarse, k_coarse)
    answered = counts.sum(axis=0) > 0
    better = cells.min(axis=0) < cells[best]  # ties keep the overall best
    choice = np.where(answered & better, np.argmin(cells, axis=0), best).astype(np.int64)
    log.debug("empirical-Bayes quality rule: strength %.3g, %d of %d clusters left the overall best", s,
              int((choice != best).sum()), k)
    return QualityRule(best=best, choice=choice, p_values=np.full(k, np.nan))
