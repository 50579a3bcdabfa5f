"""Adaptive onboarding: each next batch of validation prompts chosen from the newcomers' own answers so far.

The strategies of onboarding_set.py choose the whole set from the pool's information. Once a newcomer answered a
first batch, its own answers say where its routing decision is settled (it clearly wins or clearly loses a
cluster) and where it is not; an answer is worth buying only where it can still change a decision. So the next
batch goes to the cells (newcomer m, cluster k) with the largest expected gain of one more answer:

- The cell's estimate is what the router routes by (shrunk_values with the router's strength s: the newcomer's
  mean loss there shrunk toward the pool prior), its uncertainty a Beta-like posterior variance
  p (1 - p) / (n + s' + 1) with n its answers there and s' = max(s, PRIOR_ANSWERS) pseudo-answers of the prior.
- The decision in cluster k at cost weight lambda picks argmin_j Psi_jk + lambda c_j. The margin of m is the
  distance of its value to the best other LLM's (the winner's when m loses, the runner-up's when it wins). One
  more answer moves m's estimate by a normal of standard deviation sd~ = sqrt(var(n) - var(n + 1)); its expected
  gain in decision value is the knowledge gradient sd~ f(-|margin| / sd~), f(z) = z Phi(z) + phi(z): large where
  the margin is small against the uncertainty, near 0 where m clearly wins or clearly loses.
- Averaged over a log grid of lambdas that spans the current switches (the deferral curve's Area weighs every
  cost level) and weighted by the cluster's traffic share w_k.

Each batch is built greedily (after each pick the cell's count rises, its variance falls, its mean stays), and
within a cluster the prompt is random, so the cell's mean stays an unbiased sample of the cluster. The choice
reads the newcomers' losses and costs only on prompts they already answered (`answered`), never another label.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.stats import norm

from uniroute.routers.cluster.psi import psi_from_losses, shrunk_values
from uniroute.selection.curves import lambda_grid, switch_path

PRIOR_ANSWERS = 2.0  # pseudo-answers of a cell's prior in its variance when the router itself does not shrink
N_LAMBDAS = 16  # cost weights the gain is averaged over
VAR_FLOOR = 0.01  # p (1 - p) never below this: a cell at 0 or 1 loss after few answers is not certain
# Whether the router's shrinkage strength counts as pseudo-answers in a cell's variance (what the study measured).
# It is the router's weight on the prior, not evidence about the newcomer: at s = 50 an unanswered cell looks
# settled. False: PRIOR_ANSWERS alone (a first look only, see experiments/adaptive_study.py).
SHRINKAGE_IS_EVIDENCE = True


def _pseudo(strength: float) -> float:
    """Pseudo-answers of the prior in a cell's variance."""
    return max(strength, PRIOR_ANSWERS) if SHRINKAGE_IS_EVIDENCE else PRIOR_ANSWERS


def cell_posterior(clusters: np.ndarray, losses: np.ndarray, answered: np.ndarray, k: int,
                   strength: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean, variance, counts), each (M, K), of the newcomers' cells from their answered prompts only."""
    observed = np.where(answered, losses, np.nan)  # the labels of unanswered prompts are never read
    psi = psi_from_losses(clusters, observed, k, [str(i) for i in range(losses.shape[1])])
    mean = shrunk_values(psi.values, psi.counts, strength)
    p = np.clip(mean, 0.0, 1.0)
    var = np.maximum(p * (1.0 - p), VAR_FLOOR) / (psi.counts + _pseudo(strength) + 1.0)
    return mean, var, psi.counts.astype(np.float64)


def answer_gain(mean: np.ndarray, var: np.ndarray, counts: np.ndarray, costs: np.ndarray, weights: np.ndarray,
                strength: float) -> np.ndarray:
    """(M, K) expected gain in routing value of one more answer in each cell (module docstring)."""
    m, k = mean.shape
    if m < 2:  # nothing to compare with: every cell is as good as any other, coverage by traffic
        return np.tile(weights / (counts.sum(axis=0) + 1.0), (m, 1))
    lams = lambda_grid(switch_path(mean.T, costs), N_LAMBDAS)
    pseudo = _pseudo(strength)
    p = np.clip(mean, 0.0, 1.0)
    var_next = np.maximum(p * (1.0 - p), VAR_FLOOR) / (counts + pseudo + 2.0)
    sd = np.sqrt(np.maximum(var - var_next, 1e-12))
    gain = np.zeros((m, k))
    rows = np.arange(m)
    for lam in lams:
        u = mean + lam * costs[:, None]  # (M, K) routing value of each LLM in each cluster
        order = np.argsort(u, axis=0, kind="stable")
        first, second = u[order[0], np.arange(k)], u[order[1], np.arange(k)]
        other = np.where(rows[:, None] == order[0][None, :], second[None, :], first[None, :])
        z = -np.abs(u - other) / sd
        gain += sd * (z * norm.cdf(z) + norm.pdf(z))
    return weights[None, :] * gain / lams.size


def next_batches(clusters: np.ndarray, losses: np.ndarray, costs: np.ndarray, answered: np.ndarray,
                 weights: np.ndarray, strength: float, size: int, rng: np.random.Generator,
                 shared: bool = False) -> list[np.ndarray]:
    """Per newcomer, the next `size` prompts (indices into the candidates) to answer.

    clusters (n,) the candidates' clusters; losses and costs (n, M) the newcomers' (read where `answered` only);
    answered (n, M) who answered what; weights (K,) the clusters' traffic shares; strength the router's shrinkage.
    `shared`: one batch every newcomer answers (the gain summed over them; needs the same answered prompts), so
    their cells stay measured on the same prompts and a prompt's difficulty cancels when they are compared (a
    variant with the gain on the paired difference of the top two, their disagreement rate as its variance, did
    worse at 25 trials: RouterBench -0.0044 / +0.0009, RouterDC +0.0034 / -0.0066 Area at 25 / 50 answers).
    """
    k = weights.shape[0]
    mean, var, counts = cell_posterior(clusters, losses, answered, k, strength)
    spent = np.where(answered, costs, 0.0).sum(axis=0) / np.maximum(answered.sum(axis=0), 1)  # (M,) mean cost
    pseudo = _pseudo(strength)
    p = np.clip(mean, 0.0, 1.0)
    who = [list(range(losses.shape[1]))] if shared else [[j] for j in range(losses.shape[1])]
    out: list[np.ndarray] = []
    for group in who:
        free = ~answered[:, group].any(axis=1)
        left = {c: list(rng.permutation(np.flatnonzero((clusters == c) & free))) for c in range(k)}
        cnt = counts.copy()
        chosen: list[int] = []
        while len(chosen) < size and any(left.values()):
            v = np.maximum(p * (1.0 - p), VAR_FLOOR) / (cnt + pseudo + 1.0)
            gain = answer_gain(mean, v, cnt, spent, weights, strength)[group].sum(axis=0)
            gain[[c for c in range(k) if not left[c]]] = -np.inf
            c = int(np.argmax(gain))
            chosen.append(int(left[c].pop(0)))
            cnt[group, c] += 1
        out.extend(np.asarray(chosen, dtype=np.int64) for _ in group)
    return out


def adaptive_sets(clusters: np.ndarray, losses: np.ndarray, costs: np.ndarray, weights: np.ndarray,
                  strength: float, first: Sequence[int] | np.ndarray, size: int, batch: int, seed: int = 0,
                  shared: bool = False) -> list[np.ndarray]:
    """Per newcomer, its `size` prompts in the order asked: the shared `first` batch (chosen from the pool's
    information), then rounds of `batch` prompts each, every round chosen from every newcomer's answers so far
    (the newcomers are each other's competitors, as in the evaluation protocol's test pool)."""
    n, m = losses.shape
    rng = np.random.default_rng(seed)
    answered = np.zeros((n, m), dtype=bool)
    first = np.asarray(first, dtype=np.int64)[:size]
    answered[first, :] = True
    orders = [list(first) for _ in range(m)]
    while min(len(o) for o in orders) < size:
        step = min(batch, size - min(len(o) for o in orders))
        picks = next_batches(clusters, losses, costs, answered, weights, strength, step, rng, shared)
        if not any(p.size for p in picks):
            break
        for j, p in enumerate(picks):
            orders[j].extend(int(i) for i in p)
            answered[p, j] = True
    return [np.asarray(o, dtype=np.int64) for o in orders]
