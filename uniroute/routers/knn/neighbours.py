"""K-NN routing (paper eq. 3): a model's estimated loss on a prompt is its mean loss on the k nearest
labelled reference prompts (the validation prompts, where every pool model, new ones included, has labels).
The gamma functions, and `KnnRouter`, K-NN as a router kind.

Shapes: X (n, d) float32 L2-normalised; losses_ref (n_ref, M) float64, NaN = no label."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from uniroute.routers.cluster.kmeans import as_float32_matrix
from uniroute.routers.rule import RoutingRule

log = logging.getLogger(__name__)

KNN_BLOCK = 1024  # query rows per block: a (block, n_ref) float32 score matrix
GAMMA_BLOCK_BYTES = 64 * 2**20  # knn_gammas' gathered labels per block


def knn_gamma(X_query: np.ndarray, X_ref: np.ndarray, losses_ref: np.ndarray, k: int) -> np.ndarray:
    """(n_query, M) mean loss of each model over the k nearest reference prompts (Euclidean).

    A model with no result on any of the k neighbours falls back to its mean loss over all references.
    """
    X_ref = as_float32_matrix(X_ref, what="X_ref")
    X_query = as_float32_matrix(X_query, X_ref.shape[1], what="X_query")
    losses_ref = np.asarray(losses_ref, dtype=np.float64)
    n_ref = X_ref.shape[0]
    if losses_ref.ndim != 2 or losses_ref.shape[0] != n_ref:
        raise ValueError(f"losses_ref {losses_ref.shape} must be (n_ref={n_ref}, M)")
    if not 1 <= k <= n_ref:
        raise ValueError(f"k must lie in [1, {n_ref}] (the number of reference prompts), got {k}")
    labelled = ~np.isnan(losses_ref)
    if not labelled.any(axis=0).all():
        raise ValueError(f"models (columns) {np.nonzero(~labelled.any(axis=0))[0].tolist()} have no reference label")
    filled = np.where(labelled, losses_ref, 0.0)
    overall = filled.sum(axis=0) / labelled.sum(axis=0)  # (M,)
    neg_half_sq = -0.5 * np.einsum("nd,nd->n", X_ref, X_ref)  # argmin |q - r|^2 == argmax q.r - |r|^2/2
    ref_t = np.ascontiguousarray(X_ref.T)
    out = np.empty((X_query.shape[0], losses_ref.shape[1]), dtype=np.float64)
    for start in range(0, X_query.shape[0], KNN_BLOCK):
        s = X_query[start : start + KNN_BLOCK] @ ref_t + neg_half_sq  # (b, n_ref)
        nn = np.argpartition(-s, k - 1, axis=1)[:, :k] if k < n_ref else np.broadcast_to(np.arange(n_ref), s.shape)
        sums = filled[nn].sum(axis=1)  # (b, M)
        counts = labelled[nn].sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[start : start + s.shape[0]] = np.where(counts > 0, sums / np.maximum(counts, 1), overall)
    return out


def top_k_order(sims: np.ndarray, k: int) -> np.ndarray:
    """(n, k) column indices of the k largest entries of each row of sims (n, n_ref), largest first.

    Equal similarities are ordered by column index, so the neighbour order is fully determined.
    """
    n_ref = sims.shape[1]
    k = min(k, n_ref)
    if 4 * k >= n_ref:  # a full stable sort is cheaper than partitioning and sorting this many, same order
        return np.argsort(-sims, axis=1, kind="stable")[:, :k]
    every = np.broadcast_to(np.arange(n_ref), sims.shape)
    top = np.argpartition(-sims, k - 1, axis=1)[:, :k] if k < n_ref else every
    top_sims = np.take_along_axis(sims, top, axis=1)
    return np.take_along_axis(top, np.lexsort((top, -top_sims), axis=1), axis=1)


def index_dtype(n: int) -> type[np.signedinteger]:
    """The smallest signed integer type that indexes n rows (int16 or int32; int64 beyond 2**31)."""
    return np.int16 if n <= 2**15 else np.int32 if n <= 2**31 else np.int64


def nearest_order(X_query: np.ndarray, X_ref: np.ndarray, k: int, block: int = 1024) -> np.ndarray:
    """(n_query, k) indices of the k most cosine-similar refs per query, most similar first (X L2-normalised).

    The smallest integer type that holds the indices (int16 up to 32,768 references, else int32; the same
    indices): the build's K-NN tuning keeps one order per simulated onboarding, up to 7k queries x 5k references
    each when k climbs past a quarter of them (280 MB apiece as int64, 70 MB as int16)."""
    k = min(k, X_ref.shape[0])
    out = np.empty((X_query.shape[0], k), dtype=index_dtype(X_ref.shape[0]))
    for s in range(0, X_query.shape[0], block):
        out[s : s + block] = top_k_order(X_query[s : s + block] @ X_ref.T, k)
    return out


def knn_gammas(order: np.ndarray, losses_ref: np.ndarray, ks: Sequence[int], block: int = 512) -> dict[int, np.ndarray]:
    """{k: (n_query, M) mean loss of the k nearest refs} from a neighbour order (n_query, >= max ks).

    NaN labels are skipped; a model none of the k neighbours has a label for takes its mean loss on the refs
    (the K = 1 estimate). This is the paper's K-NN gamma (eq. 6), for several k from one neighbour search.
    """
    ks = sorted(set(int(k) for k in ks))
    if not ks or ks[-1] > order.shape[1]:
        raise ValueError(f"ks {ks} need a neighbour order with >= {ks[-1] if ks else 1} columns, got {order.shape}")
    # Rows per block within GAMMA_BLOCK_BYTES: each row gathers (k_max, M) labels (8 + 1 + 4 bytes a cell), so a
    # block of 512 rows at k_max = 5,000 (a build's K-NN tuning on 5k references) and 100 models gathered 3.3 GB;
    # every row's sums are its own, so the block size changes no number.
    block = max(1, min(block, GAMMA_BLOCK_BYTES // (13 * ks[-1] * max(1, losses_ref.shape[1]))))
    fallback = np.nanmean(losses_ref, axis=0)
    known_ref = ~np.isnan(losses_ref)
    filled_ref = np.where(known_ref, losses_ref, 0.0)
    starts = np.array([0, *ks[:-1]])  # neighbour ranks [0, k1), [k1, k2), ...: one segment sum per k
    out = {k: np.empty((order.shape[0], losses_ref.shape[1])) for k in ks}
    for s in range(0, order.shape[0], block):
        nn = order[s : s + block, : ks[-1]]  # (b, kmax)
        sums = np.add.reduceat(filled_ref[nn], starts, axis=1).cumsum(axis=1)  # (b, len(ks), M)
        counts = np.add.reduceat(known_ref[nn].astype(np.int32), starts, axis=1).cumsum(axis=1)
        for j, k in enumerate(ks):
            cnt = counts[:, j]
            with np.errstate(invalid="ignore", divide="ignore"):
                out[k][s : s + block] = np.where(cnt > 0, sums[:, j] / np.maximum(cnt, 1), fallback[None, :])
    return out


@dataclass(frozen=True, eq=False)
class KnnRouter(RoutingRule):
    """K-NN as a router kind: the validation label table is its "Psi" (one row per model), so a new model joins
    by its labels on the reference prompts, as a K-means model joins by its Psi row; nothing is refitted."""

    embedder_id: str
    models: tuple[str, ...]
    costs: np.ndarray  # (M,) cost per query of each model
    labels: np.ndarray  # (M, n_ref) each model's loss on each reference (validation) prompt, NaN = no result
    refs: np.ndarray  # (n_ref, d) float32 L2-normalised embeddings of the reference prompts
    ref_ids: tuple[str, ...]  # (n_ref,) prompt ids of the references: how a new model's labels are aligned
    neighbours: int  # k, the number of nearest references averaged

    def __post_init__(self) -> None:
        models = tuple(str(m) for m in self.models)
        costs = np.array(self.costs, dtype=np.float64, copy=True)
        labels = np.array(self.labels, dtype=np.float64, copy=True)
        refs = as_float32_matrix(np.array(self.refs, dtype=np.float32, copy=True), what="refs")
        ref_ids = tuple(str(i) for i in self.ref_ids)
        m, n_ref = len(models), refs.shape[0]
        if m == 0 or n_ref == 0:
            raise ValueError(f"a KnnRouter needs models and reference prompts, got {m} and {n_ref}")
        if len(set(models)) != m:
            dupes = sorted({x for x in models if models.count(x) > 1})
            raise ValueError(f"duplicate model names in the router: {dupes}")
        if costs.shape != (m,) or not np.all(np.isfinite(costs)) or np.any(costs < 0):
            raise ValueError(f"costs must be ({m},) finite and >= 0, got {costs.tolist()}")
        if labels.shape != (m, n_ref):
            raise ValueError(f"labels has shape {labels.shape}, expected ({m}, {n_ref}) (models x references)")
        if len(ref_ids) != n_ref:
            raise ValueError(f"{len(ref_ids)} reference ids for {n_ref} reference prompts")
        known = ~np.isnan(labels)
        if np.any((labels[known] < 0) | (labels[known] > 1)):
            raise ValueError("labels must be losses in [0, 1] (NaN = no result)")
        unlabelled = [models[i] for i in np.nonzero(~known.any(axis=1))[0]]
        if unlabelled:
            raise ValueError(f"models {unlabelled} have no label on any reference prompt")
        if not 1 <= int(self.neighbours) <= n_ref:
            raise ValueError(f"neighbours must lie in [1, {n_ref}] (the number of references), got {self.neighbours}")
        for name, value in (("costs", costs), ("labels", labels), ("refs", refs)):
            value.setflags(write=False)
            object.__setattr__(self, name, value)
        object.__setattr__(self, "models", models)
        object.__setattr__(self, "ref_ids", ref_ids)
        object.__setattr__(self, "neighbours", int(self.neighbours))

    @property
    def kind(self) -> str:
        """The router kind: "knn"."""
        return "knn"

    @property
    def k(self) -> int:
        """The number of neighbours (for a K-NN router, k plays the part K plays for the cluster routers)."""
        return self.neighbours

    def gamma(self, X: np.ndarray) -> np.ndarray:
        """(n, M) mean loss of each model over each prompt's k nearest references."""
        return knn_gamma(X, self.refs, self.labels.T, self.neighbours)

    def budget_reference(self) -> np.ndarray:
        """The reference prompts: they are the validation prompts."""
        return self.refs

    def label_row(self, prompt_ids: Sequence[str], losses: np.ndarray) -> np.ndarray:
        """(n_ref,) a model's losses on the references, from its losses (n,) on prompts (ids); NaN where none."""
        losses = np.asarray(losses, dtype=np.float64)
        if losses.shape != (len(prompt_ids),):
            raise ValueError(f"losses {losses.shape} must be one per prompt id ({len(prompt_ids)})")
        where = {str(p): i for i, p in enumerate(prompt_ids)}
        rows = np.array([where.get(r, -1) for r in self.ref_ids])
        return np.where(rows >= 0, losses[np.maximum(rows, 0)], np.nan)

    def model_row(self, prompt_ids: Sequence[str], X: np.ndarray,
                  losses: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """Its losses on the reference prompts (n_ref,) aligned by prompt id (other prompts are not references;
        X is not needed), and no counts."""
        return self.label_row(prompt_ids, np.asarray(losses, dtype=np.float64)), None

    def holds_row(self, model: str, row: np.ndarray, counts: np.ndarray | None, cost: float) -> bool:
        """Whether the router already holds this model with exactly these reference labels and cost."""
        if model not in self.models:
            return False
        i = self.models.index(model)
        return bool(np.array_equal(self.labels[i], row, equal_nan=True) and self.costs[i] == cost)

    def neighbour_ids(self, X: np.ndarray, shown: int) -> list[str]:
        """Per prompt, the ids of its `shown` nearest reference prompts, nearest first, joined by commas."""
        order = nearest_order(np.asarray(X, dtype=np.float32), self.refs, min(self.neighbours, shown))
        ids = np.asarray(self.ref_ids, dtype=object)
        return [",".join(ids[row]) for row in order]

    def clustering_id(self) -> str:
        """No clusters: an id that stands for its reference prompts."""
        digest = hashlib.sha256("\n".join(self.ref_ids).encode()).hexdigest()
        return "knn-refs-" + digest[:16]

    def with_model(self, name: str, psi_row: np.ndarray, cost: float, counts: np.ndarray | None = None) -> KnnRouter:
        """A new router with model `name` added (or replaced in place): psi_row (n_ref,) are its reference losses."""
        row = np.asarray(psi_row, dtype=np.float64)
        if row.shape != (self.refs.shape[0],):
            raise ValueError(f"label row for {name!r} has shape {row.shape}, expected ({self.refs.shape[0]},)")
        if name in self.models:
            i = self.models.index(name)
            labels, costs = self.labels.copy(), self.costs.copy()
            labels[i], costs[i] = row, cost
            models = self.models
        else:
            labels, costs, models = np.vstack([self.labels, row]), np.append(self.costs, cost), (*self.models, name)
        return replace(self, models=models, costs=costs, labels=labels)

    def without_model(self, name: str) -> KnnRouter:
        """A new router without model `name`."""
        if name not in self.models:
            raise ValueError(f"model {name!r} is not in the router (models: {list(self.models)})")
        keep = np.array([m != name for m in self.models])
        return replace(self, models=tuple(m for m in self.models if m != name), costs=self.costs[keep],
                       labels=self.labels[keep])
