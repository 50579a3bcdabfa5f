"""LLM features Psi(m): each model's mean loss (1 - score) on each prompt cluster (paper eq. 9).

Shapes: M models, K clusters. values (M, K) float64 in [0, 1]; counts (M, K) int64.

Fallback (documented): a cell with no labelled prompt behind it (count 0: the cluster holds no validation
prompt, or none that this model answered) takes the model's pool prior (pool_prior): the pool's mean loss in
that cluster, weighted against the model's overall mean loss by how many answers the model has. The paper's
eq. 9 is undefined for an empty C_k. The model's own overall mean alone (what this fallback was) let a model
with three lucky answers claim loss 0.0 on every cluster it never answered and take most of the traffic; the
pool prior is what the pool knows about the cluster, and a model with hundreds of answers keeps (almost) its
own overall mean there, the K = 1 (ZeroRouter) estimate. Cells with answers keep the paper's plain mean. A model
with no labels at all has no estimate and is an error.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # imported where a frame is read or made: a router read from its file routes without pandas
    import pandas as pd

log = logging.getLogger(__name__)

PSI_FRAME_COLUMNS = ("model", "cluster", "loss_sum", "n")


@dataclass(frozen=True, eq=False)
class Psi:
    """Per-cluster mean loss of each model, with the number of labelled prompts behind each cell."""

    models: tuple[str, ...]
    values: np.ndarray  # (M, K) float64 mean loss; count-0 cells hold the model's pool prior (pool_prior)
    counts: np.ndarray  # (M, K) int64

    def __post_init__(self) -> None:
        object.__setattr__(self, "models", tuple(self.models))
        values = np.array(self.values, dtype=np.float64, copy=True)
        counts = np.array(self.counts, dtype=np.int64, copy=True)
        if values.ndim != 2 or values.shape != counts.shape or values.shape[0] != len(self.models):
            raise ValueError(
                f"Psi shapes disagree: {len(self.models)} models, values {values.shape}, counts {counts.shape}"
            )
        if len(set(self.models)) != len(self.models):
            raise ValueError(f"Psi has duplicate model names: {sorted(self.models)}")
        if not np.all(np.isfinite(values)):
            bad = [self.models[i] for i in np.unique(np.nonzero(~np.isfinite(values))[0])]
            raise ValueError(f"Psi has non-finite values for models {bad}")
        values.setflags(write=False)
        counts.setflags(write=False)
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "counts", counts)

    @property
    def k(self) -> int:
        """Number of clusters K."""
        return int(self.values.shape[1])

    def row(self, model: str) -> np.ndarray:
        """(K,) Psi row of one model."""
        try:
            return self.values[self.models.index(model)]
        except ValueError:
            raise KeyError(f"model {model!r} not in Psi (models: {list(self.models)})") from None


def _psi_from_sums(models: Sequence[str], sums: np.ndarray, counts: np.ndarray) -> Psi:
    """Psi from per-cell loss sums and counts (M, K), applying the count-0 fallback."""
    totals = counts.sum(axis=1)
    empty = [m for m, t in zip(models, totals, strict=True) if t == 0]
    if empty:
        raise ValueError(f"no labelled prompts at all for models {empty}: cannot estimate their Psi")
    means = np.where(counts > 0, sums / np.maximum(counts, 1), 0.0)
    values = np.where(counts > 0, means, pool_prior(means, counts))
    n_fallback = int((counts == 0).sum())
    if n_fallback:
        log.info("Psi: %d of %d cells have no labelled prompt and use the pool's prior for the cluster",
                 n_fallback, counts.size)
    return Psi(models=tuple(models), values=values, counts=counts)


def psi_from_losses(cluster_of: np.ndarray, losses: np.ndarray, k: int, models: Sequence[str]) -> Psi:
    """Psi from cluster ids (n,) and losses (n, M) (NaN = no result), one column per name in models."""
    cluster_of = np.asarray(cluster_of)
    losses = np.asarray(losses, dtype=np.float64)
    models = tuple(models)
    if losses.ndim != 2 or losses.shape[0] != cluster_of.shape[0] or cluster_of.ndim != 1:
        raise ValueError(f"cluster_of {cluster_of.shape} and losses {losses.shape} must be (n,) and (n, M)")
    if losses.shape[1] != len(models):
        raise ValueError(f"losses has {losses.shape[1]} columns but {len(models)} model names were given")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if cluster_of.size and (cluster_of.min() < 0 or cluster_of.max() >= k):
        raise ValueError(f"cluster ids must lie in [0, {k}), got range [{cluster_of.min()}, {cluster_of.max()}]")
    labelled = ~np.isnan(losses)
    # One-hot (n, K) @ (n, M): per-cluster sums without a Python loop over clusters or models.
    onehot = np.zeros((cluster_of.shape[0], k), dtype=np.float64)
    onehot[np.arange(cluster_of.shape[0]), cluster_of.astype(np.int64)] = 1.0
    sums = (onehot.T @ np.where(labelled, losses, 0.0)).T  # (M, K)
    counts = np.rint(onehot.T @ labelled.astype(np.float64)).astype(np.int64).T  # (M, K)
    return _psi_from_sums(models, sums, counts)


def psi_from_frame(frame: pd.DataFrame, k: int, models: Sequence[str] | None = None) -> Psi:
    """Psi from the results' group-by (columns model, cluster, loss_sum, n: sql/queries/psi_by_cluster.sql, read
    by pipeline.pool.psi_data); models in order of appearance, or these `models` in this order (the frame's other rows
    left out: the pool prior is the pool's), as psi_from_losses gives over the same results."""
    import pandas as pd

    missing = [c for c in PSI_FRAME_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"psi frame lacks columns {missing} (has {list(frame.columns)})")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if frame.empty:
        raise ValueError("psi frame is empty: no model has a result on the clustered prompts")
    clusters = frame["cluster"].to_numpy(dtype=np.int64)
    if clusters.min() < 0 or clusters.max() >= k:
        raise ValueError(f"cluster ids must lie in [0, {k}), got range [{clusters.min()}, {clusters.max()}]")
    if models is not None:
        frame = frame[frame["model"].isin(models)]
        codes, models = pd.Index(models).get_indexer(frame["model"]), pd.Index(models)
        clusters = frame["cluster"].to_numpy(dtype=np.int64)
    else:
        codes, models = pd.factorize(frame["model"], sort=False)
    if (frame.groupby(["model", "cluster"]).size() > 1).any():
        raise ValueError("psi frame has more than one row for some (model, cluster)")
    sums = np.zeros((len(models), k), dtype=np.float64)
    counts = np.zeros((len(models), k), dtype=np.int64)
    sums[codes, clusters] = frame["loss_sum"].to_numpy(dtype=np.float64)
    counts[codes, clusters] = frame["n"].to_numpy(dtype=np.int64)
    return _psi_from_sums([str(m) for m in models], sums, counts)


# Answers at which a model's own record and the pool's view of a cluster weigh the same in its prior there: a
# model with 3 answers keeps 3/23 of how far it stands from the pool, one with 500 keeps 500/520 of it.
POOL_PRIOR_ANSWERS = 20.0


def pool_prior(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """(M, K) what each cell is shrunk toward and what an empty cell holds: pool_k + N / (N + A) * (overall - seen).

    pool_k = the pool's mean loss over every answer in cluster k (every model in values; the pool's overall mean
    where nobody answered there); overall = the model's mean loss over its N labelled prompts; seen = the pool's
    loss on those same clusters, weighted as the model's answers are; A = POOL_PRIOR_ANSWERS; clipped to [0, 1].
    So a model starts from what the pool knows about the cluster and moves by how much better or worse than the
    pool it has shown itself to be, in proportion to its evidence. Why not its own mean alone (the fallback
    before): a model known by 1-3 answers was pulled toward nothing but those answers (three correct ones: loss
    0.0 on every cluster) and took most of the traffic. Only cells with counts > 0 are read.
    """
    values = np.asarray(values, dtype=np.float64)
    counts = np.asarray(counts, dtype=np.float64)
    weighted = np.where(counts > 0, counts * values, 0.0)
    totals = counts.sum(axis=1)  # (M,)
    answered = counts.sum(axis=0)  # (K,)
    if answered.sum() == 0:  # nobody has an answer (a router stored without counts): nothing to lean on
        return values.copy()
    pool_overall = weighted.sum() / answered.sum()
    pool = np.where(answered > 0, weighted.sum(axis=0) / np.maximum(answered, 1), pool_overall)  # (K,)
    safe = np.maximum(totals, 1)
    overall = weighted.sum(axis=1) / safe  # (M,)
    seen = (counts @ pool) / safe  # (M,) the pool's loss where each model answered
    # A model without answers (a row stored without counts) has shown nothing: it gets the pool's view alone.
    lead = totals / (totals + POOL_PRIOR_ANSWERS) * (overall - seen)  # (M,)
    return np.clip(pool[None, :] + lead[:, None], 0.0, 1.0)


def shrunk_values(values: np.ndarray, counts: np.ndarray, strength: float) -> np.ndarray:
    """(M, K) Psi cells shrunk toward the pool prior: (n * cell + s * prior) / (n + s), prior = pool_prior.

    A cell backed by n labelled prompts keeps the weight n / (n + s) on its own mean, so a sparse cell leans on
    the prior and a well-measured one keeps its own; an empty cell is the prior whatever s. s = 0 is the paper's
    Psi: answered cells unchanged, empty ones the prior (the count-0 fallback of _psi_from_sums).
    """
    values = np.asarray(values, dtype=np.float64)
    counts = np.asarray(counts, dtype=np.float64)
    if strength < 0 or not np.isfinite(strength):
        raise ValueError(f"shrinkage strength must be finite and >= 0, got {strength}")
    prior = pool_prior(values, counts)
    if strength == 0:
        return np.where(counts > 0, values, prior)
    return (np.where(counts > 0, counts * values, 0.0) + strength * prior) / (counts + strength)


SPARSE_CELL = 10  # a Psi cell backed by fewer labelled prompts is flagged sparse
INTERVAL_Z = 1.96  # 95% Wilson score interval


def wilson_bounds(values: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi), each shaped like values: the 95% Wilson score interval of each cell's mean of `counts` losses in
    [0, 1] ([0, 1] where the count is 0); cell_frame's error_lo and error_hi, without a frame (routing uses them)."""
    values = np.asarray(values, dtype=np.float64)
    counts = np.asarray(counts, dtype=np.int64)
    n = counts.astype(np.float64)
    z2 = INTERVAL_Z**2
    with np.errstate(invalid="ignore", divide="ignore"):
        centre = (values + z2 / (2 * n)) / (1 + z2 / n)
        half = INTERVAL_Z * np.sqrt(values * (1 - values) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    lo = np.where(counts > 0, np.clip(centre - half, 0.0, 1.0), 0.0)
    hi = np.where(counts > 0, np.clip(centre + half, 0.0, 1.0), 1.0)
    return lo, hi


def cell_frame(models: Sequence[str], values: np.ndarray, counts: np.ndarray, strength: float = 0.0) -> pd.DataFrame:
    """One row per (model, cluster): measured error, its count, a 95% interval, the shrunk error, sparse flag.

    Columns model, cluster, error, n, error_lo, error_hi, shrunk_error, sparse. The interval is Wilson's score
    interval for a mean of n losses in [0, 1] ([0, 1] when n = 0); shrunk_error is what a router with this
    shrinkage strength routes by (shrunk_values). What the `model_cluster_errors` view shows.
    """
    import pandas as pd

    values = np.asarray(values, dtype=np.float64)
    counts = np.asarray(counts, dtype=np.int64)
    lo, hi = wilson_bounds(values, counts)
    m, k = values.shape
    return pd.DataFrame({
        "model": np.repeat(np.asarray(models, dtype=object), k),
        "cluster": np.tile(np.arange(k, dtype=np.int32), m),
        "error": values.ravel(),
        "n": counts.ravel(),
        "error_lo": lo.ravel(),
        "error_hi": hi.ravel(),
        "shrunk_error": shrunk_values(values, counts, strength).ravel(),
        "sparse": (counts < SPARSE_CELL).ravel(),
    })
