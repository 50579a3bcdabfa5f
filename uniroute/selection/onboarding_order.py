"""Which validation prompts a new LLM should answer: an ordered onboarding set, chosen from what the pool knows.

A newcomer joins UniRoute's pool by answering validation prompts; its Psi cell in a cluster is its mean error
over the answered prompts of that cluster. What the user pays is the number of answers, so the order matters:
the first N prompts of the order are the set to send for a budget of N answers, and a model that answered some
continues with the next best ones (`answered`). The order uses only the pool's information (the training LLMs'
losses, the prompts' embeddings and clusters), never a newcomer's answers.

Strategies (named, so the evaluation protocol can compare them on the same trials):

- `random`: the order given (a trial's seeded permutation; the build's too): the baseline.
- `stratified`: every cluster first (largest traffic share first), then each next answer to the cluster furthest
  below its traffic share (proportional allocation), random within a cluster.
- `allocated`: the allocation below, random within a cluster.
- `anchored`: the allocation below, and within a cluster the most representative contested prompts first (below).
- `best`: the recommended strategy, today `allocated` (below: why not `anchored` yet).

**Allocation across clusters.** The routing decision in cluster k serves a share w_k of the traffic and compares
LLMs: what moves it is the difference between a newcomer's error and the others' there, which a prompt tells only
when LLMs answer it differently. s_k, the root mean over the cluster's prompts of the variance of the pool LLMs'
losses on a prompt, is the per-answer spread of that difference; after n_k answers the newcomer's standing is off
by about s_k / sqrt(n_k). A wrong decision costs in proportion to the traffic it serves and to how far the estimate
is off, so the expected routing loss is about sum_k w_k s_k / sqrt(n_k); minimising it under sum_k n_k = N gives
n_k proportional to (w_k s_k)^(2/3). Clusters the pool answers alike (the decision is settled) and rare clusters
get fewer answers; large and contested clusters get more. The order is built greedily (each next answer goes where
it lowers that loss most), so every prefix is a good set, and every cluster gets one answer before any gets a
second: a cluster with no answer falls back to a prior, which is worse than one answer.

**Within a cluster**, `anchored` orders prompts by greedy facility location on a similarity that mixes what the prompt
says (cosine of embeddings) and how the pool answered it (agreement of the training LLMs' losses), each prompt
weighted by how much the pool disagrees on it: each next prompt is the one that most increases the weighted sum of
every cluster prompt's similarity to its closest chosen prompt. The first answers land on prompts typical of the
contested bulk of the cluster (not its outliers, which farthest-point sampling would pick), then on the next group
(the idea of "anchor points": prompts the pool's answers say are alike tell the same thing about a new LLM).

**Why `best` is `allocated`.** A newcomer's Psi cell is the plain mean of its losses on the prompts it answered in
the cluster, set beside the pool's cells, which are means over every validation prompt there. Within a cluster,
`allocated` asks a random sample, so that mean is unbiased; `anchored` asks the contested prompts first, on which
every LLM errs more, so a newcomer that answered only part of a cluster would look worse than it is next to the
pool. In the evaluation protocol every test LLM answers the same chosen prompts, so the shift is shared and
cancels in the routing decision, and `anchored` can be measured there; serving it needs a newcomer's cell
estimated relative to the pool on the same prompts (the pool's cell plus the newcomer's mean difference from the
pool on the prompts it answered), which onboarding does not do yet.

**Measured** (docs/decisions/0005-onboarding-set.md, with the figures and commands): no strategy, adaptive batches
chosen from the newcomer's own answers (selection/adaptive_onboarding.py, the study only) included, beats random at
both 25 and 50 answers on the shared datasets; neither does estimating the newcomer's cells relative to the pool or
by a regression on the pool LLMs' losses. So `best` stays `allocated` and onboarding keeps the default router's
cells.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

STRATEGIES = ("random", "stratified", "allocated", "anchored", "best")
BEST = "allocated"  # what `best` means (see the module's docstring)
DEFAULT_STRATEGY = "best"
SPREAD_FLOOR = 0.05  # a cluster where every pool LLM answered alike still gets answers: a newcomer may differ
INFORMATIVE_FLOOR = 0.01  # a prompt the pool answered alike still represents its neighbours a little
PATTERN_WEIGHT = 0.5  # share of the pool's answer agreement in the within-cluster similarity (the rest: embeddings)


@dataclass(frozen=True)
class PoolView:
    """What the pool knows about each reference cluster: its traffic share and an LLM's per-answer loss spread."""

    weights: np.ndarray  # (K,) share of the (training) prompts in each cluster; sums to 1
    spread: np.ndarray  # (K,) within-cluster standard deviation of an LLM's loss, averaged over the pool's LLMs

    @classmethod
    def of(cls, clusters: np.ndarray, losses: np.ndarray, k: int) -> PoolView:
        """From the clusters (n,) of prompts the pool answered and its losses (n, M) there (NaN: no answer)."""
        clusters = np.asarray(clusters, dtype=np.int64)
        weights = np.bincount(clusters, minlength=k).astype(np.float64)
        weights = weights / weights.sum() if weights.sum() > 0 else np.full(k, 1.0 / k)
        disagreement = prompt_disagreement(losses)
        spread = np.full(k, SPREAD_FLOOR)
        for c in range(k):
            rows = disagreement[clusters == c]
            if rows.size:
                spread[c] = max(SPREAD_FLOOR, float(np.sqrt(rows.mean())))
        return cls(weights, spread)


def prompt_disagreement(losses: np.ndarray) -> np.ndarray:
    """(n,) variance of the pool LLMs' losses on each prompt (0 where fewer than two answered): how much a prompt
    tells LLMs apart. A prompt every LLM answers alike cannot move a routing decision, which compares LLMs."""
    known = ~np.isnan(losses)
    count = known.sum(axis=1)
    filled = np.where(known, losses, 0.0)
    mean = filled.sum(axis=1) / np.maximum(count, 1)
    var = (np.where(known, (losses - mean[:, None]) ** 2, 0.0)).sum(axis=1) / np.maximum(count, 1)
    return np.where(count >= 2, var, 0.0)


def onboarding_order(strategy: str, clusters: np.ndarray, view: PoolView, size: int,
                     X: np.ndarray | None = None, pool_losses: np.ndarray | None = None,
                     answered: Sequence[int] | np.ndarray = (), seed: int = 0) -> np.ndarray:
    """The next `size` candidate prompts to answer, best first (indices into the candidates), given the candidates'
    clusters (n,), the pool's view of the clusters, and (for `anchored`) the candidates' embeddings X (n, d) and the
    pool's losses on them (n, M). `answered` (indices) were answered already: they count toward their cluster's
    allocation and are never chosen again. `random` keeps the candidates' own order."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown onboarding-set strategy {strategy!r}: choose from {', '.join(STRATEGIES)}")
    strategy = BEST if strategy == "best" else strategy
    clusters = np.asarray(clusters, dtype=np.int64)
    n = clusters.shape[0]
    done = np.zeros(n, dtype=bool)
    done[list(answered)] = True
    size = min(size, int((~done).sum()))
    if strategy == "random":
        return np.flatnonzero(~done)[:size]
    rng = np.random.default_rng(seed)
    queues = _cluster_queues(strategy, clusters, done, X, pool_losses, rng, size)
    counts = np.bincount(clusters[done], minlength=view.weights.shape[0]).astype(np.float64)
    order: list[int] = []
    while len(order) < size:
        c = _next_cluster(strategy, counts, view, queues)
        order.append(queues[c].pop(0))
        counts[c] += 1
    return np.asarray(order, dtype=np.int64)


def _next_cluster(strategy: str, counts: np.ndarray, view: PoolView, queues: dict[int, list[int]]) -> int:
    """The cluster whose next answer helps most (among clusters with candidates left)."""
    open_ = np.array([c for c, q in queues.items() if q])
    empty = open_[counts[open_] == 0]
    if empty.size:  # coverage first: the biggest unanswered cluster by its allocation weight
        weight = view.weights if strategy == "stratified" else view.weights * view.spread
        return int(empty[np.argmax(weight[empty])])
    n = counts[open_]
    if strategy == "stratified":  # proportional: the cluster furthest below its share
        gain = view.weights[open_] / (n + 1.0)
    else:  # the drop of w s / sqrt(n) from one more answer
        gain = view.weights[open_] * view.spread[open_] * (1.0 / np.sqrt(n) - 1.0 / np.sqrt(n + 1.0))
    return int(open_[np.argmax(gain)])


def _cluster_queues(strategy: str, clusters: np.ndarray, done: np.ndarray, X: np.ndarray | None,
                    pool_losses: np.ndarray | None, rng: np.random.Generator, size: int) -> dict[int, list[int]]:
    """Per cluster, its unanswered candidates in the order they are to be answered (at most `size` of them: no
    cluster gets more answers than the whole set)."""
    queues: dict[int, list[int]] = {}
    for c in np.unique(clusters):
        members = np.flatnonzero(clusters == c)
        if strategy == "anchored":
            if X is None or pool_losses is None:
                raise ValueError("the `anchored` onboarding set needs the candidates' embeddings and the pool's losses")
            informative = prompt_disagreement(pool_losses[members]) + INFORMATIVE_FLOOR
            ranked = facility_order(_similarity(X[members], pool_losses[members]), done[members], informative,
                                    limit=size)
            queues[int(c)] = [int(members[i]) for i in ranked]
        else:
            queues[int(c)] = [int(i) for i in rng.permutation(members[~done[members]])]
    return queues


def _similarity(X: np.ndarray, losses: np.ndarray) -> np.ndarray:
    """(n, n) similarity in [0, 1] of a cluster's prompts: embeddings' cosine and the pool's answer agreement."""
    X = np.asarray(X, dtype=np.float64)
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    unit = X / np.where(norms > 0, norms, 1.0)
    cosine = (unit @ unit.T + 1.0) / 2.0
    known = ~np.isnan(losses)
    filled = np.where(known, losses, 0.0)
    both = known.astype(np.float64) @ known.T.astype(np.float64)
    # mean |l_i - l_j| over the LLMs that answered both (losses in [0, 1]), through sums of products
    diff = (filled**2) @ known.T + known @ (filled.T**2) - 2.0 * filled @ filled.T  # sum of squared differences
    agreement = np.where(both > 0, 1.0 - np.sqrt(np.clip(diff, 0.0, None) / np.maximum(both, 1.0)), 0.5)
    return (1.0 - PATTERN_WEIGHT) * cosine + PATTERN_WEIGHT * agreement


def facility_order(similarity: np.ndarray, done: np.ndarray, weights: np.ndarray | None = None,
                   limit: int | None = None) -> list[int]:
    """Unanswered prompts in greedy facility-location order (the first `limit` of them): each next one raises most
    the (weighted) summed similarity of every prompt to its closest chosen (or answered) prompt. Nested by
    construction; ties go to the lower index. Each step costs n x (unchosen) operations."""
    n = similarity.shape[0]
    weights = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    best = similarity[:, done].max(axis=1) if done.any() else np.zeros(n)
    left = list(np.flatnonzero(~done))
    order: list[int] = []
    while left and (limit is None or len(order) < limit):
        gains = weights @ np.maximum(similarity[:, left] - best[:, None], 0.0)
        pick = left.pop(int(np.argmax(gains)))
        order.append(pick)  # type: ignore[arg-type]  # an np.int64 index, kept as the callers have it
        best = np.maximum(best, similarity[:, pick])
    return order
