"""Offline evaluation of routers on a dynamic LLM pool (DESIGN.md section 4; paper section 6 and appendices).

Per trial: LLMs split at random into train/test, prompts 60/10/30 into train/val/test; every method routes the
test prompts among the test LLMs only, and each yields a deferral curve (normalised cost -> mean test score)
summarised by Area, Area50, QNC and Peak. Trials run in parallel on Dask (one task per trial), seeded per trial
so results do not depend on the number of workers.

Shapes: N prompts, M models, d embedding dimension. Embeddings X (N, d) float32; scores and costs (N, M)
float64 with NaN where a model has no result for a prompt; losses are 1 - score.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

log = logging.getLogger(__name__)

METHODS = ("zero", "knn", "kmeans", "learnedmap", "mlp", "matfac")
ORACLES = ("mlp", "matfac")  # clairvoyant: trained with the test LLMs' labels; upper bounds, not admissible
VAL_SIZE_METHODS = ("knn", "kmeans", "learnedmap")
METHOD_LABELS = {
    "zero": "ZeroRouter",
    "knn": "K-NN",
    "kmeans": "UniRoute (K-means)",
    "learnedmap": "UniRoute (LearnedMap)",
    "mlp": "MLP (clairvoyant oracle)",
    "matfac": "MatFac (clairvoyant oracle)",
}
LONG_COLUMNS = ("prompt_id", "prompt", "model", "score", "cost")
# Normalised-cost grid on which per-trial curves are averaged for the plot and the JSON.
CURVE_GRID = np.linspace(0.0, 1.0, 201)
# A curve "reaches" a score when it is within this of it: curve scores are sums of per-prompt scores
# accumulated in a different order than the single LLM's mean, so exact equality can miss by an ulp.
REACH_TOL = 1e-9
SINGLE_THREAD_ENV = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "TOKENIZERS_PARALLELISM": "false",
}


# ---------------------------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class RoutingData:
    """Score and cost matrices of the evaluated models (the part of the data that trials need)."""

    models: tuple[str, ...]
    scores: np.ndarray  # (N, M) float64 in [0, 1], NaN = no result
    costs: np.ndarray  # (N, M) float64 >= 0, NaN exactly where scores is NaN

    def __post_init__(self) -> None:
        if self.scores.shape != self.costs.shape or self.scores.shape[1] != len(self.models):
            raise ValueError(
                f"scores {self.scores.shape} and costs {self.costs.shape} must be (N, {len(self.models)})"
            )
        if not np.array_equal(np.isnan(self.scores), np.isnan(self.costs)):
            raise ValueError("costs must be NaN exactly where scores are NaN")

    @property
    def n_prompts(self) -> int:
        """Number of prompts N."""
        return int(self.scores.shape[0])


@dataclass(frozen=True, eq=False)
class EvalData:
    """A long-format log pivoted to matrices, plus the prompt texts to embed."""

    prompt_ids: tuple[str, ...]  # (N,)
    prompts: tuple[str, ...]  # (N,) prompt text
    routing: RoutingData
    excluded_models: tuple[str, ...]  # models left out because none of their results has a cost
    filled_costs: int  # result rows whose null cost was filled with the model's mean cost


def long_frame(path: Path) -> pd.DataFrame:
    """The long-format rows of a Parquet/CSV/JSONL file, or of `long.parquet` inside a dataset folder."""
    path = Path(path)
    if path.is_dir():
        if not (path / "long.parquet").exists():
            raise FileNotFoundError(f"{path} is a folder without long.parquet")
        path = path / "long.parquet"
    if not path.exists():
        raise FileNotFoundError(f"no such file: {path}")
    suffix = path.suffix.lower()
    if suffix in (".parquet", ".pq"):
        frame = pd.read_parquet(path)
    elif suffix == ".csv":
        frame = pd.read_csv(path)
    elif suffix in (".jsonl", ".ndjson", ".json"):
        frame = pd.read_json(path, lines=suffix != ".json")
    else:
        raise ValueError(f"{path}: unknown long-format extension {suffix!r} (use .parquet, .csv or .jsonl)")
    missing = [c for c in LONG_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"{path}: long format needs columns {list(LONG_COLUMNS)}; missing {missing}")
    return frame


def eval_data_from_frame(frame: pd.DataFrame) -> EvalData:
    """Pivot long rows (prompt_id, prompt, model, score, cost) to (N, M) matrices; drop cost-less models."""
    frame = frame[list(LONG_COLUMNS)].copy()
    frame["prompt_id"] = frame["prompt_id"].astype(str)
    frame["model"] = frame["model"].astype(str)
    frame["score"] = pd.to_numeric(frame["score"], errors="raise").astype(np.float64)
    frame["cost"] = pd.to_numeric(frame["cost"], errors="raise").astype(np.float64)
    frame = frame[frame["score"].notna()]
    if frame.empty:
        raise ValueError("no scored rows in the long-format data")
    bad = frame[(frame["score"] < 0) | (frame["score"] > 1)]
    if len(bad):
        example = bad.head(3)[["prompt_id", "model", "score"]].to_dict("records")
        raise ValueError(f"scores outside [0, 1], e.g. {example}")
    if (frame["cost"] < 0).any():
        neg = frame[frame["cost"] < 0].head(3)[["prompt_id", "model", "cost"]].to_dict("records")
        raise ValueError(f"negative costs, e.g. {neg}")
    dupes = frame.duplicated(["prompt_id", "model"], keep=False)
    if dupes.any():
        example = frame[dupes].head(4)[["prompt_id", "model", "score"]].to_dict("records")
        raise ValueError(f"{int(dupes.sum())} rows repeat a (prompt_id, model) pair, e.g. {example}")
    # A model with no cost at all cannot be placed on a cost axis; it is left out of cost-based evaluation.
    has_cost = frame.groupby("model")["cost"].apply(lambda s: s.notna().any())
    excluded = tuple(sorted(has_cost.index[~has_cost.to_numpy()]))
    if excluded:
        log.warning("models without any cost are excluded from cost-based evaluation: %s", list(excluded))
    frame = frame[~frame["model"].isin(excluded)]
    if frame["model"].nunique() < 2:
        raise ValueError(f"need at least 2 models with costs, have {sorted(frame['model'].unique())}")
    # Partially missing costs: fill with the model's mean known cost (its best per-query estimate).
    missing_cost = frame["cost"].isna()
    filled = int(missing_cost.sum())
    if filled:
        mean_cost = frame.groupby("model")["cost"].transform("mean")
        frame.loc[missing_cost, "cost"] = mean_cost[missing_cost]
        log.warning("%d result rows have no cost; filled with their model's mean cost", filled)
    # Sorted ids and names: the matrices do not depend on the row order of the input file.
    prompt_ids = np.sort(frame["prompt_id"].unique())
    models = tuple(sorted(frame["model"].unique()))
    row = pd.Index(prompt_ids).get_indexer(frame["prompt_id"])
    col = pd.Index(models).get_indexer(frame["model"])
    scores = np.full((len(prompt_ids), len(models)), np.nan)
    costs = np.full_like(scores, np.nan)
    scores[row, col] = frame["score"].to_numpy()
    costs[row, col] = frame["cost"].to_numpy()
    texts = frame.drop_duplicates("prompt_id").set_index("prompt_id")["prompt"].reindex(prompt_ids)
    if texts.isna().any():
        raise ValueError(f"prompts without text: {list(texts.index[texts.isna()][:5])}")
    return EvalData(
        prompt_ids=tuple(prompt_ids.tolist()),
        prompts=tuple(texts.astype(str).tolist()),
        routing=RoutingData(models=models, scores=scores, costs=costs),
        excluded_models=excluded,
        filled_costs=filled,
    )


# ---------------------------------------------------------------------------------------------------------
# Deferral curves and their metrics
# ---------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Curve:
    """Upper monotone envelope of (normalised cost, score) points: both strictly increasing."""

    cost: np.ndarray  # (P,) strictly increasing
    score: np.ndarray  # (P,) strictly increasing

    def at(self, x: np.ndarray) -> np.ndarray:
        """Curve values at costs x: linear between vertices, constant beyond the first and last."""
        return np.interp(x, self.cost, self.score)


def upper_envelope(cost: np.ndarray, score: np.ndarray) -> Curve:
    """Keep the points no other point dominates (cheaper-or-equal and at least as good), sorted by cost."""
    cost = np.asarray(cost, dtype=np.float64).ravel()
    score = np.asarray(score, dtype=np.float64).ravel()
    if cost.shape != score.shape or cost.size == 0:
        raise ValueError(f"need equal, non-empty cost and score arrays, got {cost.shape} and {score.shape}")
    if not (np.all(np.isfinite(cost)) and np.all(np.isfinite(score))):
        raise ValueError("curve points must be finite")
    order = np.lexsort((-score, cost))  # by cost, best score first among equal costs
    cost, score = cost[order], score[order]
    # A point survives when it beats every cheaper-or-equal point before it.
    prev_best = np.concatenate([[-np.inf], np.maximum.accumulate(score)[:-1]])
    keep = score > prev_best
    return Curve(cost=cost[keep], score=score[keep])


def curve_area(curve: Curve, lo: float = 0.0, hi: float = 1.0) -> float:
    """Exact integral of the piecewise-linear curve over normalised cost [lo, hi]."""
    if not hi > lo:
        raise ValueError(f"need lo < hi, got [{lo}, {hi}]")
    inside = curve.cost[(curve.cost > lo) & (curve.cost < hi)]
    xs = np.concatenate([[lo], inside, [hi]])
    return float(np.trapezoid(curve.at(xs), xs))


def reach_cost(curve: Curve, target: float) -> float:
    """Least normalised cost at which the curve reaches `target`, searched from its first vertex (inf if never).

    The curve is held constant to the left of its first vertex for Area, but no router attains a cost below its
    cheapest point, so the search starts there (otherwise a curve starting above the target would get cost 0).
    """
    reached = np.nonzero(curve.score >= target - REACH_TOL)[0]
    if reached.size == 0:
        return math.inf
    j = int(reached[0])
    if j == 0:
        return float(curve.cost[0])
    x0, x1 = curve.cost[j - 1], curve.cost[j]
    y0, y1 = curve.score[j - 1], curve.score[j]
    return float(x0 + (min(target, y1) - y0) / (y1 - y0) * (x1 - x0))


def curve_metrics(curve: Curve, best_score: float, best_cost: float) -> dict[str, float]:
    """Area, Area50, QNC (relative to the best single LLM at normalised cost best_cost) and Peak."""
    if not best_cost > 0:
        raise ValueError(f"the best single LLM's normalised cost must be > 0, got {best_cost}")
    return {
        "area": curve_area(curve, 0.0, 1.0),
        "area50": curve_area(curve, 0.0, 0.5),
        "qnc": reach_cost(curve, best_score) / best_cost,
        "peak": float(curve.score.max()),
    }


@dataclass(frozen=True)
class SwitchPath:
    """Each prompt's routed model as lambda grows: a start model and switch events to cheaper models."""

    start: np.ndarray  # (n,) model index at lambda = 0
    row: np.ndarray  # (E,) prompt of each event, events sorted by lambda
    lam: np.ndarray  # (E,) lambda at which the switch happens (the new model is chosen from here on)
    old: np.ndarray  # (E,) model before the switch
    new: np.ndarray  # (E,) model after


def switch_path(gamma: np.ndarray, costs: np.ndarray) -> SwitchPath:
    """Exact routing path of argmin_m gamma[i, m] + lam * costs[m] over lam >= 0 (ties: cheaper, lower index).

    gamma (n, M), costs (M,). Walks each prompt's lower envelope of lines: the choice only ever moves to
    cheaper models, at most M - 1 times, so the whole path costs O(n M^2) and every switch is exact.
    """
    from uniroute.route import argmin_cheapest

    gamma = np.asarray(gamma, dtype=np.float64)
    costs = np.asarray(costs, dtype=np.float64)
    n, m = gamma.shape
    if costs.shape != (m,):
        raise ValueError(f"costs has shape {costs.shape}, expected ({m},)")
    if not np.all(np.isfinite(gamma)):
        raise ValueError("gamma must be finite")
    idx = np.arange(m)
    ar = np.arange(n)
    start = argmin_cheapest(gamma, costs, idx) if n else np.zeros(0, dtype=np.int64)
    cur = start.copy()
    cur_lam = np.zeros(n)
    rows, lams, olds, news = [], [], [], []
    for _ in range(m):
        c_cur = costs[cur][:, None]
        g_cur = gamma[ar, cur][:, None]
        cheaper = costs[None, :] < c_cur
        with np.errstate(divide="ignore", invalid="ignore"):
            cross = np.where(cheaper, (gamma - g_cur) / (c_cur - costs[None, :]), np.inf)
        # In exact arithmetic no cheaper model crosses before the current lambda; clamp float noise.
        cross = np.maximum(cross, cur_lam[:, None])
        nxt_lam = cross.min(axis=1)
        active = np.isfinite(nxt_lam)
        if not active.any():
            break
        tied = np.where(cross == nxt_lam[:, None], 0.0, np.inf)  # among simultaneous crossings: cheapest
        nxt = argmin_cheapest(tied, costs, idx)
        rows.append(ar[active])
        lams.append(nxt_lam[active])
        olds.append(cur[active])
        news.append(nxt[active])
        cur = np.where(active, nxt, cur)
        cur_lam = np.where(active, nxt_lam, cur_lam)
    if rows:
        row, lam, old, new = (np.concatenate(a) for a in (rows, lams, olds, news))
        order = np.argsort(lam, kind="stable")
        return SwitchPath(start=start, row=row[order], lam=lam[order], old=old[order], new=new[order])
    empty = np.zeros(0, dtype=np.int64)
    return SwitchPath(start=start, row=empty, lam=np.zeros(0), old=empty, new=empty)


def lambda_grid(path: SwitchPath, n_lambdas: int = 256) -> np.ndarray:
    """0 plus n_lambdas log-spaced values from the first to the last switch of the path (covers every switch).

    At lambda = 0 every prompt gets its best-quality model; at the last switch every prompt has reached the
    cheapest model it will ever get, so the grid spans the best-quality to the cheapest routing.
    """
    positive = path.lam[path.lam > 0]
    if positive.size == 0:
        return np.zeros(1)
    lo, hi = float(positive.min()), float(positive.max())
    if hi <= lo:
        return np.array([0.0, lo])
    grid = np.geomspace(lo, hi, n_lambdas)
    grid[0], grid[-1] = lo, hi  # exact ends: the first and the last switch are on the grid
    return np.concatenate([[0.0], grid])


def routed_points(
    gamma: np.ndarray,
    router_costs: np.ndarray,
    scores: np.ndarray,
    prompt_costs: np.ndarray,
    n_lambdas: int = 256,
) -> tuple[np.ndarray, np.ndarray]:
    """(cost (L,), score (L,)) of routing by argmin gamma + lam * router_costs over the lambda grid.

    gamma (n, M) estimated losses; router_costs (M,) the costs the router sees; scores (n, M) and
    prompt_costs (n, M) the realised score and (normalised) cost of each prompt on each model.
    """
    n = gamma.shape[0]
    if n == 0:
        raise ValueError("no prompts to route")
    path = switch_path(gamma, router_costs)
    lams = lambda_grid(path, n_lambdas)
    score0 = scores[np.arange(n), path.start].sum()
    cost0 = prompt_costs[np.arange(n), path.start].sum()
    d_score = scores[path.row, path.new] - scores[path.row, path.old]
    d_cost = prompt_costs[path.row, path.new] - prompt_costs[path.row, path.old]
    # Routing at lambda includes every switch at or below it (ties go to the cheaper model).
    upto = np.searchsorted(path.lam, lams, side="right")
    cum_score = np.concatenate([[0.0], np.cumsum(d_score)])
    cum_cost = np.concatenate([[0.0], np.cumsum(d_cost)])
    return (cost0 + cum_cost[upto]) / n, (score0 + cum_score[upto]) / n


def routing_curve(
    gamma: np.ndarray, router_costs: np.ndarray, scores: np.ndarray, prompt_costs: np.ndarray, n_lambdas: int = 256
) -> Curve:
    """Deferral curve (upper monotone envelope) of a gamma-based router on labelled prompts."""
    cost, score = routed_points(gamma, router_costs, scores, prompt_costs, n_lambdas)
    return upper_envelope(cost, score)


def sign_test(a: Sequence[float], b: Sequence[float]) -> dict[str, float | int]:
    """Paired two-sided sign test of a against b: wins (a > b), losses, exact binomial p (ties dropped)."""
    from scipy.stats import binomtest

    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"paired samples must have equal shapes, got {a.shape} and {b.shape}")
    wins, losses = int((a > b).sum()), int((a < b).sum())
    p = 1.0 if wins + losses == 0 else float(binomtest(wins, wins + losses, 0.5, alternative="two-sided").pvalue)
    return {"wins": wins, "losses": losses, "p": p}


def candidate_grid(lo: int, hi: float, ratio: float) -> list[int]:
    """Integers from lo to floor(hi) spaced by about `ratio` (geometric), always including both ends.

    A fixed ladder lo * ratio**i (rather than geomspace between the ends) makes the grids of different
    validation sizes share values, so fitted clusterings are reused across the validation-size study.
    """
    top = max(int(math.floor(hi)), lo)
    values = []
    v = float(lo)
    while round(v) < top / math.sqrt(ratio):  # stop early rather than crowd the upper end
        values.append(round(v))
        v *= ratio
    values.append(top)
    return sorted(set(values))


def knn_candidates(n_val: int) -> list[int]:
    """Candidate k for K-NN: 5 to n_val / 3 (paper appendix), spaced by a factor of about 2."""
    return candidate_grid(5, n_val / 3, 2.0)


def kmeans_candidates(n_val: int) -> list[int]:
    """Candidate K for K-means and LearnedMap: 3 to n_val / 50 (paper appendix; K = 3 when that is below 3)."""
    return candidate_grid(3, n_val / 50, 1.5)


def learned_map_candidates(n_val: int) -> list[int]:
    """Candidate K for the LearnedMap: every other K-means candidate, keeping both ends.

    Same range as K-means (3 to n_val / 50), thinned because each candidate trains a network (about 2 s on
    mmlu_pro_cot29's 7,200 training prompts) while a K-means candidate costs about 0.2 s: with the full grid
    the LearnedMap alone would take most of the 10-minute budget for 100 trials.
    """
    grid = kmeans_candidates(n_val)
    return sorted({*grid[::2], grid[-1]})


# ---------------------------------------------------------------------------------------------------------
# One trial
# ---------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class EvalConfig:
    """What to evaluate and how; plain values so that it pickles to Dask workers."""

    seed: int = 0
    methods: tuple[str, ...] = METHODS
    val_sizes: tuple[int, ...] = ()  # validation-size study: sizes below the full validation set
    train_frac: float = 0.6
    val_frac: float = 0.1
    n_lambdas: int = 256
    learned_map_epochs: int = 5
    oracle_epochs: int = 10  # paper: 30; see oracle_curve
    oracle_options: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = sorted(set(self.methods) - set(METHODS))
        if unknown:
            raise ValueError(f"unknown methods {unknown}; choose from {list(METHODS)}")
        if not self.methods:
            raise ValueError("no methods to evaluate")
        if not (self.train_frac > 0 and self.val_frac > 0 and self.train_frac + self.val_frac < 1):
            raise ValueError(f"bad split fractions train={self.train_frac} val={self.val_frac}")
        if any(s < 2 for s in self.val_sizes):
            raise ValueError(f"validation sizes must be >= 2, got {list(self.val_sizes)}")


@dataclass(frozen=True)
class TrialSplit:
    """Which LLMs and prompts play which role in one trial (indices into RoutingData)."""

    train_models: np.ndarray  # (M_tr,) sorted
    test_models: np.ndarray  # (M_te,) sorted
    train: np.ndarray  # (n_tr,) prompt indices
    val: np.ndarray  # (n_val,) in a random order: val[:s] is the nested subsample of size s
    test: np.ndarray  # (n_te,) only prompts on which every test LLM has a result
    fit_seed: int


def trial_split(data: RoutingData, seed: int, trial: int, train_frac: float = 0.6, val_frac: float = 0.1) -> TrialSplit:
    """The seeded LLM split (2/3 train; half when fewer than 12 LLMs) and 60/10/30 prompt split of one trial."""
    rng = np.random.default_rng([seed, trial])
    m = len(data.models)
    n_train_models = m // 2 if m < 12 else round(2 * m / 3)
    model_perm = rng.permutation(m)
    n = data.n_prompts
    prompt_perm = rng.permutation(n)
    n_tr, n_val = int(round(train_frac * n)), int(round(val_frac * n))
    fit_seed = int(rng.integers(0, 2**31 - 1))
    test_models = np.sort(model_perm[n_train_models:])
    test = np.sort(prompt_perm[n_tr + n_val :])
    # Test prompts are scored among test LLMs only, so each must have a result from every test LLM
    # (otherwise a routed decision could land on a missing label).
    test = test[~np.isnan(data.scores[np.ix_(test, test_models)]).any(axis=1)]
    return TrialSplit(
        train_models=np.sort(model_perm[:n_train_models]),
        test_models=test_models,
        train=np.sort(prompt_perm[:n_tr]),
        val=prompt_perm[n_tr : n_tr + n_val],  # kept in random order for nested subsamples
        test=test,
        fit_seed=fit_seed,
    )


def mean_costs(costs: np.ndarray) -> np.ndarray:
    """(M,) mean per-query cost of each model over the prompts where it has a result; (n, M) in."""
    known = ~np.isnan(costs)
    counts = known.sum(axis=0)
    if (counts == 0).any():
        raise ValueError(f"models {np.nonzero(counts == 0)[0].tolist()} have no result on these prompts")
    return np.where(known, costs, 0.0).sum(axis=0) / counts


def nan_mean_rows(values: np.ndarray, fallback: np.ndarray) -> np.ndarray:
    """Mean over axis 1 of (n, k, M) ignoring NaN; (n, M), cells with no value take fallback (M,)."""
    known = ~np.isnan(values)
    counts = known.sum(axis=1)
    sums = np.where(known, values, 0.0).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / np.maximum(counts, 1), fallback[None, :])


def top_k_order(sims: np.ndarray, k: int) -> np.ndarray:
    """(n, k) column indices of the k largest entries of each row of sims (n, n_ref), largest first.

    Equal similarities are ordered by column index, so the neighbour order is fully determined.
    """
    n_ref = sims.shape[1]
    k = min(k, n_ref)
    every = np.broadcast_to(np.arange(n_ref), sims.shape)
    top = np.argpartition(-sims, k - 1, axis=1)[:, :k] if k < n_ref else every
    top_sims = np.take_along_axis(sims, top, axis=1)
    return np.take_along_axis(top, np.lexsort((top, -top_sims), axis=1), axis=1)


def nearest_order(X_query: np.ndarray, X_ref: np.ndarray, k: int, block: int = 1024) -> np.ndarray:
    """(n_query, k) indices of the k most cosine-similar refs per query, most similar first (X L2-normalised)."""
    k = min(k, X_ref.shape[0])
    out = np.empty((X_query.shape[0], k), dtype=np.int64)
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


@dataclass
class _Pool:
    """Labelled prompts and costs of one LLM pool on one prompt set, normalised for a curve."""

    scores: np.ndarray  # (n, P) realised scores
    prompt_costs: np.ndarray  # (n, P) realised costs / C
    router_costs: np.ndarray  # (P,) c(m) / C, the costs the router sees
    norm: float  # C

    def curve(self, gamma: np.ndarray, n_lambdas: int) -> Curve:
        return routing_curve(gamma, self.router_costs, self.scores, self.prompt_costs, n_lambdas)


def _pool(data: RoutingData, prompts: np.ndarray, models: np.ndarray, c_models: np.ndarray) -> _Pool:
    """The pool `models` scored on `prompts` (all labelled), with router costs c_models (from val)."""
    norm = float(c_models.max())
    if not norm > 0:
        raise ValueError(f"the most expensive model of the pool has cost {norm}; cannot normalise")
    return _Pool(
        scores=data.scores[np.ix_(prompts, models)],
        prompt_costs=data.costs[np.ix_(prompts, models)] / norm,
        router_costs=c_models / norm,
        norm=norm,
    )


class TrialState:
    """Everything of one trial that several methods and validation sizes share (fits cached per K)."""

    def __init__(self, X: np.ndarray, data: RoutingData, split: TrialSplit, config: EvalConfig) -> None:
        self.X, self.data, self.split, self.config = X, data, split, config
        self.losses = 1.0 - data.scores
        self.X_train, self.X_test = X[split.train], X[split.test]
        self.X_val = X[split.val]
        self.train_losses = self.losses[np.ix_(split.train, split.train_models)]  # (n_tr, M_tr)
        self._centroids: dict[int, Any] = {}
        self._psi_train: dict[int, np.ndarray] = {}
        self._maps: dict[int, Any] = {}
        self._val_member: dict[tuple[str, int], np.ndarray] = {}
        self._test_member: dict[tuple[str, int], np.ndarray] = {}
        self._val_train_order: np.ndarray | None = None
        self._test_val_sims: np.ndarray | None = None

    # ---- pools ---------------------------------------------------------------------------------------
    def tuning_pool(self, n_val: int) -> tuple[np.ndarray, _Pool]:
        """Positions (into split.val[:n_val]) of val prompts labelled by every train LLM, and their pool."""
        val = self.split.val[:n_val]
        keep = ~np.isnan(self.data.scores[np.ix_(val, self.split.train_models)]).any(axis=1)
        c = mean_costs(self.data.costs[np.ix_(val, self.split.train_models)])
        return np.nonzero(keep)[0], _pool(self.data, val[keep], self.split.train_models, c)

    def test_pool(self, n_val: int) -> _Pool:
        """Test prompts among the test LLMs, with router costs c(m) from the first n_val val prompts."""
        val = self.split.val[:n_val]
        c = mean_costs(self.data.costs[np.ix_(val, self.split.test_models)])
        return _pool(self.data, self.split.test, self.split.test_models, c)

    # ---- cached fits ---------------------------------------------------------------------------------
    def centroids(self, k: int) -> Any:
        from uniroute.cluster import fit_centroids
        from uniroute.features import psi_from_losses

        if k not in self._centroids:
            cents = fit_centroids(self.X_train, k, seed=self.split.fit_seed)
            self._centroids[k] = cents
            names = [self.data.models[i] for i in self.split.train_models]
            # Training LLMs' Psi on the training prompts: what tuning routes with (paper appendix).
            self._psi_train[k] = psi_from_losses(cents.assign(self.X_train), self.train_losses, k, names).values
            self._val_member[("kmeans", k)] = cents.membership(self.X_val).astype(np.float64)
            self._test_member[("kmeans", k)] = cents.membership(self.X_test).astype(np.float64)
        return self._centroids[k]

    def learned_map(self, k: int) -> Any:
        from uniroute.learned_map import fit_learned_map

        if k not in self._maps:
            self.centroids(k)
            lmap = fit_learned_map(
                self.X_train, self.train_losses, self._psi_train[k], seed=self.split.fit_seed,
                epochs=self.config.learned_map_epochs,
            )
            self._maps[k] = lmap
            self._val_member[("learnedmap", k)] = lmap.membership(self.X_val).astype(np.float64)
            self._test_member[("learnedmap", k)] = lmap.membership(self.X_test).astype(np.float64)
        return self._maps[k]

    def member(self, method: str, k: int, which: str) -> np.ndarray:
        """(n, K) cluster membership of the val or test prompts under a cached K-means / LearnedMap fit."""
        if method == "kmeans":
            self.centroids(k)
        else:
            self.learned_map(k)
        return (self._val_member if which == "val" else self._test_member)[(method, k)]

    def val_train_order(self, k_max: int) -> np.ndarray:
        """(n_val, k_max) nearest training prompts of every val prompt (for K-NN tuning)."""
        if self._val_train_order is None or self._val_train_order.shape[1] < k_max:
            self._val_train_order = nearest_order(self.X_val, self.X_train, k_max)
        return self._val_train_order

    def test_val_sims(self) -> np.ndarray:
        """(n_te, n_val) cosine similarity of test prompts to val prompts (reused across val sizes)."""
        if self._test_val_sims is None:
            self._test_val_sims = self.X_test @ self.X_val.T
        return self._test_val_sims

    # ---- methods -------------------------------------------------------------------------------------
    def tune_clusters(self, method: str, n_val: int) -> tuple[int, dict[int, float]]:
        """K maximising the val Area of routing among train LLMs (train-prompt Psi), and every candidate's Area."""
        pos, pool = self.tuning_pool(n_val)
        areas = {}
        for k in kmeans_candidates(n_val) if method == "kmeans" else learned_map_candidates(n_val):
            member = self.member(method, k, "val")[pos]
            gamma = member @ self._psi_train[k].T
            areas[k] = curve_area(pool.curve(gamma, self.config.n_lambdas))
        return max(areas, key=lambda k: (areas[k], -k)), areas  # ties: the smaller K

    def cluster_curve(self, method: str, k: int, n_val: int, pool: _Pool) -> Curve:
        """Test curve of K-means / LearnedMap routing: test LLMs' Psi from the val prompts (paper eq. 9)."""
        from uniroute.features import psi_from_losses

        val = self.split.val[:n_val]
        cents = self.centroids(k)
        names = [self.data.models[i] for i in self.split.test_models]
        # The LearnedMap only changes Phi(x); Psi of a new LLM is its per-cluster val loss on the
        # K-means clusters in both variants (paper section 4.3: Psi does not depend on theta).
        psi = psi_from_losses(
            cents.assign(self.X_val[:n_val]), self.losses[np.ix_(val, self.split.test_models)], k, names
        )
        gamma = self.member(method, k, "test") @ psi.values.T
        return pool.curve(gamma, self.config.n_lambdas)

    def tune_knn(self, n_val: int) -> tuple[int, dict[int, float]]:
        """k maximising the val Area of K-NN over training prompts, routing among train LLMs."""
        ks = knn_candidates(n_val)
        pos, pool = self.tuning_pool(n_val)
        order = self.val_train_order(max(knn_candidates(len(self.split.val))))[:n_val][pos]
        gammas = knn_gammas(order, self.train_losses, ks)
        areas = {k: curve_area(pool.curve(g, self.config.n_lambdas)) for k, g in gammas.items()}
        return max(areas, key=lambda k: (areas[k], -k)), areas

    def knn_curve(self, k: int, n_val: int, pool: _Pool) -> Curve:
        """Test curve of K-NN over the first n_val val prompts with the test LLMs' val labels."""
        kk = min(k, n_val)
        order = top_k_order(self.test_val_sims()[:, :n_val], kk)
        val = self.split.val[:n_val]
        gamma = knn_gammas(order, self.losses[np.ix_(val, self.split.test_models)], [kk])[kk]
        return pool.curve(gamma, self.config.n_lambdas)

    def zero_curve(self, n_val: int, pool: _Pool) -> Curve:
        """ZeroRouter: hull of the test LLMs' val (cost, score), mixtures' expected test (cost, score)."""
        from uniroute.baselines import zero_router_curve_points, zero_router_hull

        val = self.split.val[:n_val]
        val_losses = np.nanmean(self.losses[np.ix_(val, self.split.test_models)], axis=0)
        hull = zero_router_hull(pool.router_costs, val_losses)
        cost, score = zero_router_curve_points(hull, pool.prompt_costs.mean(axis=0), pool.scores.mean(axis=0))
        return upper_envelope(cost, score)

    def oracle_curve(self, method: str, pool: _Pool) -> Curve:
        """Clairvoyant MLP / MatFac: trained on train + val prompts with every LLM's labels (upper bound)."""
        from uniroute.baselines import OracleMatFac, OracleMLP

        # 10 epochs instead of the paper's 30 by default (best held-out epoch kept either way): 30 epochs of
        # both oracles took about as long as every admissible method together and would break the 10-minute
        # budget for 100 trials; the oracles are reference upper bounds, not the methods under study.
        fit_rows = np.concatenate([self.split.train, self.split.val])
        cls = OracleMLP if method == "mlp" else OracleMatFac
        oracle = cls(epochs=self.config.oracle_epochs, random_state=self.split.fit_seed, **self.config.oracle_options)
        oracle.fit(self.X[fit_rows], self.losses[fit_rows])
        gamma = oracle.gamma(self.X_test)[:, self.split.test_models]
        return pool.curve(gamma, self.config.n_lambdas)


def _single_threaded() -> None:
    """Pin numeric libraries to one thread in this process (workers share two cores)."""
    for key, value in SINGLE_THREAD_ENV.items():
        os.environ.setdefault(key, value)
    # Only if already imported: zero/knn/kmeans-only runs need not pay torch's import time, and the torch
    # trainers (learned_map, baselines) pin their own threads while they train.
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)


def trial_result(X: np.ndarray, data: RoutingData, trial: int, config: EvalConfig) -> dict[str, Any]:
    """Metrics, chosen hyper-parameters, mean-curve samples and validation-size Areas of one trial."""
    from threadpoolctl import threadpool_limits

    _single_threaded()
    started = time.perf_counter()
    split = trial_split(data, config.seed, trial, config.train_frac, config.val_frac)
    if split.test.size == 0:
        raise ValueError(f"trial {trial}: no test prompt has a result from every test LLM")
    state = TrialState(X, data, split, config)
    n_val = len(split.val)
    pool = state.test_pool(n_val)
    test_cost = pool.prompt_costs.mean(axis=0)  # (M_te,) normalised test cost of each test LLM
    test_score = pool.scores.mean(axis=0)
    best = int(np.lexsort((test_cost, -test_score))[0])  # best test score; ties: the cheaper
    out: dict[str, Any] = {
        "trial": trial,
        "train_models": [data.models[i] for i in split.train_models],
        "test_models": [data.models[i] for i in split.test_models],
        "n_test_prompts": int(split.test.size),
        "n_val_prompts": n_val,
        "llm_points": {"cost": test_cost.tolist(), "score": test_score.tolist()},
        "metrics": {}, "chosen": {}, "tuning": {}, "curve": {}, "seconds": {}, "valsize": {},
    }
    with threadpool_limits(1):
        for method in config.methods:
            t0 = time.perf_counter()
            if method == "zero":
                curve = state.zero_curve(n_val, pool)
            elif method == "knn":
                k, areas = state.tune_knn(n_val)
                out["chosen"][method], out["tuning"][method] = k, areas
                curve = state.knn_curve(k, n_val, pool)
            elif method in ("kmeans", "learnedmap"):
                k, areas = state.tune_clusters(method, n_val)
                out["chosen"][method], out["tuning"][method] = k, areas
                curve = state.cluster_curve(method, k, n_val, pool)
            else:
                curve = state.oracle_curve(method, pool)
            out["metrics"][method] = curve_metrics(curve, float(test_score[best]), float(test_cost[best]))
            out["curve"][method] = curve.at(CURVE_GRID).tolist()
            out["seconds"][method] = time.perf_counter() - t0
        # Validation-size study: nested subsamples val[:s] of the same trial; tuning re-run per size.
        t0 = time.perf_counter()
        for size in config.val_sizes:
            if size >= n_val:
                continue
            sub_pool = state.test_pool(size)
            entry: dict[str, Any] = {"area": {}, "chosen": {}}
            for method in (m for m in VAL_SIZE_METHODS if m in config.methods):
                if method == "knn":
                    k, _ = state.tune_knn(size)
                    curve = state.knn_curve(k, size, sub_pool)
                else:
                    k, _ = state.tune_clusters(method, size)
                    curve = state.cluster_curve(method, k, size, sub_pool)
                entry["area"][method] = curve_area(curve)
                entry["chosen"][method] = k
            out["valsize"][str(size)] = entry
        out["seconds"]["valsize"] = time.perf_counter() - t0
    out["seconds"]["total"] = time.perf_counter() - started
    log.info("trial %d done in %.1f s", trial, out["seconds"]["total"])
    return out


# ---------------------------------------------------------------------------------------------------------
# Many trials, in parallel
# ---------------------------------------------------------------------------------------------------------
def trial_results(
    X: np.ndarray,
    data: RoutingData,
    trials: int,
    config: EvalConfig,
    workers: int = 2,
    scheduler_address: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[dict[str, Any]]:
    """Run trials 0..trials-1: in-process when workers == 0, else one Dask task per trial (sorted by trial)."""
    if trials < 1:
        raise ValueError(f"trials must be >= 1, got {trials}")
    X = np.ascontiguousarray(X, dtype=np.float32)
    if X.shape[0] != data.n_prompts:
        raise ValueError(f"{X.shape[0]} embeddings for {data.n_prompts} prompts")
    if workers == 0 and scheduler_address is None:
        results = []
        for t in range(trials):
            results.append(trial_result(X, data, t, config))
            if progress:
                progress(t + 1, trials)
        return results
    if workers < 0:
        raise ValueError(f"workers must be >= 0, got {workers}")
    with _dask_client(workers, scheduler_address) as client:
        from distributed import as_completed

        # Scatter the arrays once; every trial task reads the same copy on its worker.
        X_f = client.scatter(X, broadcast=True)
        data_f = client.scatter(data, broadcast=True)
        futures = [
            client.submit(trial_result, X_f, data_f, t, config, key=f"uniroute-trial-{config.seed}-{t}-{id(config)}")
            for t in range(trials)
        ]
        for done, _ in enumerate(as_completed(futures), start=1):
            if progress:
                progress(done, trials)
        results = client.gather(futures)
    return sorted(results, key=lambda r: r["trial"])


@contextlib.contextmanager
def _dask_client(workers: int, scheduler_address: str | None) -> Iterator[Any]:
    from distributed import Client, LocalCluster

    # The scheduler and nannies log every worker start and stop at INFO; keep the command's stderr readable.
    for name in ("distributed", "distributed.scheduler", "distributed.nanny", "distributed.core"):
        logging.getLogger(name).setLevel(max(logging.WARNING, logging.getLogger(name).level))
    if scheduler_address:
        with Client(scheduler_address) as client:
            yield client
        return
    # Processes, one thread each: the trials are numpy/torch bound and the GIL would serialise threads.
    with (
        LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
            env=SINGLE_THREAD_ENV, silence_logs=logging.WARNING,
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client


# ---------------------------------------------------------------------------------------------------------
# Summaries
# ---------------------------------------------------------------------------------------------------------
def _finite_mean(values: Sequence[float]) -> float | None:
    arr = np.asarray(values, dtype=np.float64)
    arr = arr[np.isfinite(arr)]
    return float(arr.mean()) if arr.size else None


def evaluation_report(results: list[dict[str, Any]], config: EvalConfig) -> dict[str, Any]:
    """The JSON result (DESIGN.md section 5): means over trials, sign tests, chosen hyper-parameters."""
    methods = [m for m in METHODS if m in config.methods]
    n = len(results)
    summary: dict[str, Any] = {}
    for m in methods:
        rows = [r["metrics"][m] for r in results]
        area = np.array([r["area"] for r in rows])
        area50 = np.array([r["area50"] for r in rows])
        qnc = np.array([r["qnc"] for r in rows])
        peak = np.array([r["peak"] for r in rows])
        summary[m] = {
            "area": float(area.mean()),
            "area50": float(area50.mean()),
            "qnc": _finite_mean(qnc),  # mean over trials where the best LLM's score is reached
            "qnc_inf_frac": float(np.mean(~np.isfinite(qnc))),
            "peak": float(peak.mean()),
            "area_std": float(area.std(ddof=1)) if n > 1 else 0.0,
            "area50_std": float(area50.std(ddof=1)) if n > 1 else 0.0,
            "label": METHOD_LABELS[m],
            "oracle": m in ORACLES,
        }
    sign_tests = {}
    for i, a in enumerate(methods):
        for b in methods[i + 1 :]:
            sign_tests[f"{a}_vs_{b}"] = sign_test(
                [r["metrics"][a]["area"] for r in results], [r["metrics"][b]["area"] for r in results]
            )
    chosen: dict[str, Any] = {}
    for m in (m for m in ("knn", "kmeans", "learnedmap") if m in methods):
        values = [int(r["chosen"][m]) for r in results]
        counts = Counter(values)
        cand = sorted({int(k) for r in results for k in r["tuning"][m]})
        val_area = {str(k): _finite_mean([r["tuning"][m][k] for r in results if k in r["tuning"][m]]) for k in cand}
        chosen[m] = {
            "candidates": cand,
            "chosen_counts": {str(k): counts[k] for k in sorted(counts)},
            "median": float(np.median(values)),
            "mean_val_area_by_candidate": val_area,  # tuning Area (train LLMs on val), mean over trials
        }
    curves = {m: np.mean([r["curve"][m] for r in results], axis=0).tolist() for m in methods}
    return {
        "trials": n,
        "methods": summary,
        "sign_tests": sign_tests,
        "k": chosen,
        "per_trial_area": {m: [r["metrics"][m]["area"] for r in results] for m in methods},
        "mean_curve": {"cost": CURVE_GRID.tolist(), **curves},
        # Every trial's test LLMs as (name, normalised test cost, test score): the plot's grey points.
        "test_llm_points": [
            [[name, c, sc] for name, c, sc in zip(r["test_models"], r["llm_points"]["cost"], r["llm_points"]["score"],
                                                 strict=True)]
            for r in results
        ],
        "n_test_prompts_mean": float(np.mean([r["n_test_prompts"] for r in results])),
        "n_val_prompts": int(results[0]["n_val_prompts"]),
        "trial_seconds_mean": float(np.mean([r["seconds"]["total"] for r in results])),
        "method_seconds_mean": {
            k: float(np.mean([r["seconds"][k] for r in results])) for k in results[0]["seconds"] if k != "total"
        },
    }


def val_size_report(results: list[dict[str, Any]], config: EvalConfig) -> dict[str, Any]:
    """Area versus number of validation prompts: mean and 96% interval (2 standard errors) per method."""
    methods = [m for m in VAL_SIZE_METHODS if m in config.methods]
    n_val = int(results[0]["n_val_prompts"])
    sizes = sorted({s for s in config.val_sizes if s < n_val})
    skipped = sorted({s for s in config.val_sizes if s >= n_val})
    out_methods: dict[str, Any] = {m: {"mean": [], "half_width": [], "std": []} for m in methods}
    chosen: dict[str, list[dict[str, int]]] = {m: [] for m in methods}
    sign: dict[str, list[dict[str, Any]]] = {}
    paired: dict[str, dict[str, list[float]]] = {}
    labels = [*sizes, n_val]
    for size in labels:
        areas = {}
        for m in methods:
            if size == n_val:
                vals = np.array([r["metrics"][m]["area"] for r in results])
                ks = [r["chosen"][m] for r in results]
            else:
                vals = np.array([r["valsize"][str(size)]["area"][m] for r in results])
                ks = [r["valsize"][str(size)]["chosen"][m] for r in results]
            areas[m] = vals
            sd = float(vals.std(ddof=1)) if len(vals) > 1 else 0.0
            out_methods[m]["mean"].append(float(vals.mean()))
            out_methods[m]["std"].append(sd)
            out_methods[m]["half_width"].append(2 * sd / math.sqrt(len(vals)))
            chosen[m].append({str(k): c for k, c in sorted(Counter(int(k) for k in ks).items())})
        for i, a in enumerate(methods):
            for b in methods[i + 1 :]:
                sign.setdefault(f"{a}_vs_{b}", []).append(sign_test(areas[a], areas[b]))
                # The trials' LLM splits move every method's Area together; the paired difference is what
                # separates two methods, so its 96% interval is reported beside the per-method intervals.
                diff = areas[a] - areas[b]
                sd = float(diff.std(ddof=1)) if len(diff) > 1 else 0.0
                entry = paired.setdefault(f"{a}_vs_{b}", {"mean": [], "half_width": []})
                entry["mean"].append(float(diff.mean()))
                entry["half_width"].append(2 * sd / math.sqrt(len(diff)))
    return {
        "trials": len(results),
        "sizes": labels,
        "skipped_sizes": skipped,
        "n_val_all": n_val,
        "methods": out_methods,
        "chosen": chosen,
        "sign_tests": sign,
        "paired_area_difference": paired,
        "interval": "mean +/- 2 standard errors over trials (96%)",
    }


# ---------------------------------------------------------------------------------------------------------
# Plots
# ---------------------------------------------------------------------------------------------------------
def write_curve_plot(report: dict[str, Any], path: Path, title: str) -> None:
    """Mean deferral curve per method (oracles dashed) with every trial's test LLMs as faded grey x."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 5.2))
    points = report["test_llm_points"]
    xs = [c for trial in points for _, c, _ in trial]
    ys = [s for trial in points for _, _, s in trial]
    alpha = max(0.2, min(0.6, 20.0 / max(len(points), 1)))
    ax.scatter(xs, ys, marker="x", color="grey", alpha=alpha, s=14, linewidths=0.8,
               label=f"test LLMs ({len(points)} trials)", zorder=1)
    grid = np.asarray(report["mean_curve"]["cost"])
    for m in (m for m in METHODS if m in report["methods"]):
        style = "--" if m in ORACLES else "-"
        s = report["methods"][m]
        ax.plot(grid, report["mean_curve"][m], style, lw=1.8, zorder=2,
                label=f"{METHOD_LABELS[m]}  (Area {s['area']:.3f})")
    ax.set_xlim(0, 1.02)
    ax.set_xlabel("normalised cost (mean cost / most expensive test LLM's cost)")
    ax.set_ylabel("mean test score")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def write_val_size_plot(report: dict[str, Any], path: Path, title: str) -> None:
    """Area versus validation size (log x) with 96% intervals, one line per method."""
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.8))
    sizes = np.asarray(report["sizes"], dtype=float)
    for i, (m, vals) in enumerate(report["methods"].items()):
        offset = sizes * (1 + 0.03 * (i - 1))  # small horizontal offsets keep the bars apart
        ax.errorbar(offset, vals["mean"], yerr=vals["half_width"], marker="o", capsize=3, label=METHOD_LABELS[m])
    ax.set_xscale("log")
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())  # only the studied sizes are labelled
    ax.set_xticks(sizes)
    ax.set_xticklabels([str(int(s)) for s in sizes])
    ax.set_xlabel("number of validation prompts (last = all)")
    ax.set_ylabel("Area on unseen test LLMs (96% interval)")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


# ---------------------------------------------------------------------------------------------------------
# Embeddings and the whole evaluation
# ---------------------------------------------------------------------------------------------------------
PROMPT_PARTS = ("full", "last-block")


def prompt_texts(prompts: Sequence[str], part: str = "full") -> list[str]:
    """The text of each prompt to embed: all of it, or its last block (after the last blank line).

    `last-block` is for logs whose prompts carry few-shot demonstrations before the question (RouterBench's
    arc-challenge and winogrande): MiniLM reads only the first 256 tokens, which would be the shared
    demonstrations, so every prompt of such a task would embed alike. A prompt without a blank line is kept whole.
    """
    if part not in PROMPT_PARTS:
        raise ValueError(f"unknown prompt part {part!r}; choose from {list(PROMPT_PARTS)}")
    if part == "full":
        return list(prompts)
    out = []
    for text in prompts:
        blocks = [b for b in text.strip().split("\n\n") if b.strip()]
        out.append(blocks[-1].strip() if blocks else text)
    return out


def prompt_embeddings(texts: Sequence[str], embedder_name: str, db_path: Path, seed: int) -> tuple[np.ndarray, str]:
    """(N, d) float32 embeddings of texts from the store's cache, and the embedder id.

    TF-IDF is fitted once per evaluation on the texts of all prompts (no labels are used, so no test
    information leaks into routing; refitting per trial would dominate the run time).
    """
    from uniroute.embed import embed_cached, make_embedder

    fit_texts = list(texts) if embedder_name == "tfidf" else None
    embedder = make_embedder(embedder_name, fit_texts=fit_texts, seed=seed)
    X = embed_cached(db_path, list(texts), embedder)
    embedder_id = getattr(embedder, "embedder_id", None) or getattr(embedder, "id", None) or embedder_name
    return np.ascontiguousarray(X, dtype=np.float32), str(embedder_id)


def evaluate(
    data: EvalData,
    X: np.ndarray,
    trials: int,
    config: EvalConfig,
    workers: int = 2,
    scheduler_address: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[dict[str, Any], dict[str, Any] | None, list[dict[str, Any]]]:
    """Run the trials; return the JSON report, the validation-size report (or None) and the raw trial results."""
    started = time.perf_counter()
    results = trial_results(X, data.routing, trials, config, workers, scheduler_address, progress)
    report = evaluation_report(results, config)
    report["seconds"] = time.perf_counter() - started
    report.update(
        seed=config.seed,
        n_prompts=data.routing.n_prompts,
        models=list(data.routing.models),
        excluded_models=list(data.excluded_models),
        filled_costs=data.filled_costs,
        workers=workers,
        protocol={
            "llm_split": "2/3 train, 1/3 test (half/half when fewer than 12 LLMs), random per trial",
            "prompt_split": f"{config.train_frac:.0%} train / {config.val_frac:.0%} val / rest test",
            "test_prompts": "only test prompts on which every test LLM has a result",
            "costs": "c(m) = mean cost on val prompts; normalised by the largest c(m) of the test pool",
            "lambda_grid": f"0 plus {config.n_lambdas} log-spaced values from the first to the last switch",
            "oracles": "mlp and matfac are clairvoyant upper bounds trained with the test LLMs' labels",
            "learned_map_epochs": config.learned_map_epochs,
            "oracle_epochs": config.oracle_epochs,
        },
    )
    study = val_size_report(results, config) if config.val_sizes and any(
        m in config.methods for m in VAL_SIZE_METHODS
    ) else None
    return report, study, results


def _significantly_lower(report: dict[str, Any], a: str, b: str, alpha: float) -> bool:
    """Whether method a's per-trial Area is significantly below b's (paired sign test at level alpha)."""
    key = f"{a}_vs_{b}" if f"{a}_vs_{b}" in report["sign_tests"] else f"{b}_vs_{a}"
    t = report["sign_tests"][key]
    wins_a, losses_a = (t["wins"], t["losses"]) if key.startswith(f"{a}_vs_") else (t["losses"], t["wins"])
    return losses_a > wins_a and t["p"] < alpha


# Marks after an Area in the summary table: significantly below that reference method's Area.
AREA_MARKS = {"learnedmap": "*", "kmeans": "†"}


def summary_table(
    report: dict[str, Any], marks: dict[str, str] | None = None, alpha: float = 0.01
) -> str:
    """Markdown table of the report; a mark after the Area says it is significantly below that reference's.

    Default marks: `*` below UniRoute (LearnedMap) (as in the paper's table), `†` below UniRoute (K-means).
    """
    marks = AREA_MARKS if marks is None else marks
    marks = {ref: sym for ref, sym in marks.items() if ref in report["methods"]}
    lines = [
        "| method | Area | Area50 | QNC | QNC = inf | Peak |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for m, s in report["methods"].items():
        mark = "".join(sym for ref, sym in marks.items() if ref != m and _significantly_lower(report, m, ref, alpha))
        qnc = "—" if s["qnc"] is None else f"{100 * s['qnc']:.1f}%"
        lines.append(
            f"| {s['label']} | {s['area']:.4f}{mark} | {s['area50']:.4f} | {qnc} | "
            f"{100 * s['qnc_inf_frac']:.0f}% | {s['peak']:.4f} |"
        )
    return "\n".join(lines)


def sign_test_table(report: dict[str, Any], alpha: float = 0.01) -> str:
    """Markdown table of every paired sign test on per-trial Area (wins of A, losses of A, p)."""
    lines = ["| A vs B | A wins | A loses | p | significant at 0.01 |", "|---|---:|---:|---:|---|"]
    for pair, t in report["sign_tests"].items():
        a, b = pair.split("_vs_")
        verdict = ("A better" if t["wins"] > t["losses"] else "B better") if t["p"] < alpha else "no"
        lines.append(
            f"| {METHOD_LABELS[a]} vs {METHOD_LABELS[b]} | {t['wins']} | {t['losses']} | {t['p']:.2g} | {verdict} |"
        )
    return "\n".join(lines)


def markdown_report(report: dict[str, Any], study: dict[str, Any] | None = None, alpha: float = 0.01) -> str:
    """The result as Markdown a README can quote: summary table with its legend, sign tests, validation-size study."""
    parts = [
        summary_table(report, alpha=alpha),
        ", ".join(f"`{sym}`: Area significantly below {METHOD_LABELS[ref]}" for ref, sym in AREA_MARKS.items())
        + f" (paired sign test over {report['trials']} trials, alpha = {alpha}). MLP and MatFac are clairvoyant "
        "upper bounds.",
        sign_test_table(report, alpha=alpha),
    ]
    if study is not None:
        parts.append(f"Validation-size study (Area, mean ± 96% half-width over {study['trials']} trials):")
        parts.append(val_size_table(study, alpha=alpha))
    return "\n\n".join(parts)


def write_outputs(
    report: dict[str, Any],
    study: dict[str, Any] | None,
    results: list[dict[str, Any]],
    out: Path,
    title: str,
) -> list[Path]:
    """Write the JSON report and the deferral-curve PNG beside it (+ the validation-size JSON/PNG)."""
    import json

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1, allow_nan=False) + "\n")
    png = out.with_suffix(".png")
    write_curve_plot(report, png, title)
    paths = [out, png]
    if study is not None:
        study_json = out.with_name(out.stem + "_valsize.json")
        study_png = out.with_name(out.stem + "_valsize.png")
        study.update(dataset=report.get("dataset"), embedder_id=report.get("embedder_id"), seed=report.get("seed"))
        study_json.write_text(json.dumps(study, indent=1, allow_nan=False) + "\n")
        write_val_size_plot(study, study_png, f"{title}\nArea vs number of validation prompts")
        paths += [study_json, study_png]
    return paths


def val_size_table(study: dict[str, Any], alpha: float = 0.01) -> str:
    """Markdown table of the validation-size study: Area +/- 96% half-width per method and size."""
    sizes = study["sizes"]
    head = "| method | " + " | ".join(
        f"{s} (all)" if s == study["n_val_all"] else str(s) for s in sizes
    ) + " |"
    lines = [head, "|---|" + "---:|" * len(sizes)]
    for m, vals in study["methods"].items():
        cells = [f"{mu:.4f} ± {hw:.4f}" for mu, hw in zip(vals["mean"], vals["half_width"], strict=True)]
        lines.append(f"| {METHOD_LABELS[m]} | " + " | ".join(cells) + " |")
    for pair, tests in study["sign_tests"].items():
        a, b = pair.split("_vs_")
        cells = [f"{t['wins']}/{t['losses']}{' *' if t['p'] < alpha else ''}" for t in tests]
        label = f"sign test {METHOD_LABELS[a]} vs {METHOD_LABELS[b]} (wins/losses)"
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    for pair, diff in study.get("paired_area_difference", {}).items():
        a, b = pair.split("_vs_")
        cells = [f"{mu:+.4f} ± {hw:.4f}" for mu, hw in zip(diff["mean"], diff["half_width"], strict=True)]
        lines.append(f"| Area of {METHOD_LABELS[a]} − {METHOD_LABELS[b]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
