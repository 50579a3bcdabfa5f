"""Pilot: does a regression (GREG) estimator of a newcomer's Psi make a chosen onboarding set beat random?

The paper's cell (the default): a test LLM's mean loss on the validation prompts it answered in the cluster,
shrunk as the default router does (count-aware, tuned strength). The regression cell: the newcomer's loss on
EVERY validation prompt of the cluster, observed where it answered and predicted elsewhere from the training
LLMs' losses on that prompt, then averaged over the cluster (survey sampling's regression estimator). The
prediction is a ridge regression of the newcomer's answered losses on the pool LLMs' losses on the same prompts,
with an unpenalised intercept and the weights shrunk toward the pool mean (equal weights): with few answers it is
the pool's loss plus the newcomer's mean offset (the pool-referenced cell, whose shift is shared by every test LLM
and cancels), with more it leans on the pool LLMs the newcomer resembles, which differs per newcomer and does not
cancel. The ridge strength is chosen per newcomer by leave-one-out error on its own answers, so only labels the
newcomer gave are read (the poisoning property holds: an unasked prompt's label is never used).

Same trials, splits and tuning as `uniroute evaluate --val-sizes ... --val-selection ...`, the default router
(`kmeans_shrunk`); per strategy and size the Area of each estimator, paired with random + the paper's estimator.

Run: `OMP_NUM_THREADS=1 nice -n 15 .venv/bin/python -m benchmarks.quality.onboarding_regression_pilot
      --data ../shared/datasets/routerdc_model7/long.parquet --trials 25 --out /tmp/pilot.json --record NAME`
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from benchmarks.quality.onboarding_estimator_pilot import pilot_inputs, strategy_states
from uniroute.routers.cluster.psi import psi_from_losses, shrunk_values
from uniroute.selection.curves import curve_area
from uniroute.selection.state import TrialState
from uniroute.selection.statistics import sign_test

KIND = "kmeans_shrunk"  # the default router
RIDGE_GRID = (0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 1e6)  # 1e6: the pool mean plus an offset (the referenced cell)
FIXED_RIDGE = 30.0  # `ridge30`: a fixed, strong pull toward the pool mean (the LOO choice is noisy on 0/1 losses)
SOFT_MISS = 0.3  # `softmax`: the chance a newcomer that "is" pool LLM j still answers a prompt differently
ESTIMATORS = ("paper", "regression", "ridge30", "softmax")
RESULTS = Path(__file__).resolve().parents[1] / "results" / "onboarding_regression_pilot.json"


def ridge_predict(pool_all: np.ndarray, answered: np.ndarray, y: np.ndarray,
                  grid: tuple[float, ...] = RIDGE_GRID) -> tuple[np.ndarray, float]:
    """(n_all,) the newcomer's predicted loss on every prompt, from the pool's losses pool_all (n_all, P) and its
    losses y on the rows `answered`; the ridge strength by leave-one-out squared error (exact for ridge)."""
    u = np.full(pool_all.shape[1], 1.0 / pool_all.shape[1])
    base = pool_all @ u  # the pool mean on every prompt
    P = pool_all[answered]
    z = y - base[answered]
    Pc = P - P.mean(axis=0)
    zc = z - z.mean()
    n = len(y)
    best = (np.inf, None, None)
    gram = Pc.T @ Pc
    for alpha in grid:
        inv = np.linalg.inv(gram + alpha * np.eye(gram.shape[0]))
        d = inv @ Pc.T @ zc
        resid = zc - Pc @ d
        lev = 1.0 / n + np.einsum("ij,jk,ik->i", Pc, inv, Pc)
        loo = float(np.mean((resid / np.maximum(1.0 - lev, 1e-6)) ** 2))
        if loo < best[0] - 1e-12:
            best = (loo, d, alpha)
    _, d, alpha = best
    b = z.mean() - P.mean(axis=0) @ d
    return np.clip(base + b + pool_all @ d, 0.0, 1.0), float(alpha)


def softmax_predict(pool_all: np.ndarray, answered: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    """(n_all,) a mixture of the pool LLMs' losses, each weighted by the likelihood that the newcomer answers as it
    does up to a miss rate SOFT_MISS (|y - l| as the miss on graded losses), plus the newcomer's mean residual."""
    miss = np.abs(y[:, None] - pool_all[answered])  # (n, P) in [0, 1]
    loglik = (miss * np.log(SOFT_MISS) + (1.0 - miss) * np.log(1.0 - SOFT_MISS)).sum(axis=0)
    w = np.exp(loglik - loglik.max())
    w /= w.sum()
    mix = pool_all @ w
    return np.clip(mix + (y - mix[answered]).mean(), 0.0, 1.0), float(w.max())


def regression_cells(state: TrialState, k: int, n: int, how: str = "regression") -> tuple[np.ndarray, list[float]]:
    """(M_te, K) GREG Psi of the test LLMs onboarded on the first n validation prompts, and the chosen strengths."""
    sp = state.split
    clusters = state.fits.val_cluster(k)  # (n_val,) every validation prompt, the chosen first
    pool_val = state.losses[np.ix_(sp.val, sp.train_models)]
    col_mean = np.nanmean(pool_val, axis=0)
    pool_val = np.where(np.isnan(pool_val), col_mean[None, :], pool_val)  # a missing pool answer: its mean
    tr_clusters = state.fits.train_cluster(k)
    pool_tr = np.where(np.isnan(state.train_losses), np.nanmean(state.train_losses, axis=0), state.train_losses)
    counts = np.bincount(clusters, minlength=k)
    y_all = state.test_llm_val_losses(n)  # (n, M_te)
    cells = np.zeros((y_all.shape[1], k))
    alphas = []
    for j in range(y_all.shape[1]):
        known = ~np.isnan(y_all[:, j])
        answered = np.flatnonzero(known)
        pool_all = np.vstack([pool_val, pool_tr])
        if how == "softmax":
            pred, alpha = softmax_predict(pool_all, answered, y_all[known, j])
        else:
            pred, alpha = ridge_predict(pool_all, answered, y_all[known, j],
                                        (FIXED_RIDGE,) if how == "ridge30" else RIDGE_GRID)
        alphas.append(alpha)
        filled = pred[: len(clusters)].copy()
        filled[answered] = y_all[known, j]  # observed where answered
        sums = np.bincount(clusters, weights=filled, minlength=k)
        cell = sums / np.maximum(counts, 1)
        empty = counts == 0  # no validation prompt in the cluster: predicted on its training prompts
        if empty.any():
            tr_pred = pred[len(clusters):]
            tr_cell = np.bincount(tr_clusters, weights=tr_pred, minlength=k) / np.maximum(
                np.bincount(tr_clusters, minlength=k), 1)
            cell[empty] = tr_cell[empty]
        cells[j] = cell
    return cells, alphas


def areas(state: TrialState, sizes: list[int], full: bool) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for n in sizes:
        pool = state.test_pool(n)
        tuned = state.tuned(KIND, n)
        k = tuned.value
        psi = psi_from_losses(state.fits.val_cluster(k)[:n], state.test_llm_val_losses(n), k, state.test_llm_names())
        member = state.test_onehot(k)
        gammas = {"paper": member @ shrunk_values(psi.values, psi.counts, tuned.shrinkage).T}
        for how in ESTIMATORS[1:]:
            cells, _ = regression_cells(state, k, n, how)
            gammas[how] = member @ cells.T
        out[str(n)] = {name: curve_area(pool.curve(g, state.config.n_lambdas)) for name, g in gammas.items()}
    if full:
        n_val = len(state.split.val)
        out["all"] = {"paper": curve_area(state.kind_curve(state.tuned(KIND, n_val), n_val, state.test_pool(n_val)))}
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--data", type=Path, required=True)
    p.add_argument("--trials", type=int, default=25)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--sizes", default="25,50")
    p.add_argument("--strategies", default="random,allocated,anchored,disagree",
                   help="disagree: `allocated` across clusters, the pool's most contested prompts first within")
    p.add_argument("--prompt-part", default="full")
    p.add_argument("--out", type=Path, required=True, help="the per-trial Areas (JSON)")
    p.add_argument("--from-raw", action="store_true", help="summarise an --out of an earlier run, run nothing")
    p.add_argument("--record", help="a name: the summary goes under it into " + str(RESULTS))
    a = p.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    if a.from_raw:
        _finish(a, json.loads(a.out.read_text()), sizes)
        return
    config, data, X = pilot_inputs(a.data, a.prompt_part, a.seed, KIND, sizes)
    rows = []
    t0 = time.perf_counter()
    with threadpool_limits(1):
        for trial in range(a.trials):
            states = strategy_states(X, data, config, trial, a.strategies.split(","), max(sizes))
            row = {strategy: areas(st, sizes, full=strategy == "random") for strategy, st in states.items()}
            rows.append(row)
            a.out.write_text(json.dumps(rows))  # every trial: a run stopped early still has its trials
            print(f"trial {trial} {time.perf_counter() - t0:.0f}s", flush=True)
    _finish(a, rows, sizes)


def _finish(a: argparse.Namespace, rows: list, sizes: list[int]) -> None:
    """Print the summary and (--record) keep it in the results file with the command that made it."""
    out = _summary(rows, sizes)
    if a.record:
        results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
        results[a.record] = {
            "command": (f"python -m benchmarks.quality.onboarding_regression_pilot --data {a.data} "
                        f"--trials {len(rows)} --seed {a.seed} --sizes {','.join(map(str, sizes))} "
                        f"--strategies {','.join(rows[0])}"),
            "kind": KIND, "embedder": "static", "trials": len(rows), "seed": a.seed, **out}
        RESULTS.write_text(json.dumps(results, indent=1) + "\n")


def _summary(rows: list, sizes: list[int]) -> dict:
    """Each (strategy, estimator) against random with the paper's estimator (the study's baseline)."""
    full = np.mean([r["random"]["all"]["paper"] for r in rows])
    print(f"trials {len(rows)}; all prompts Area {full:.4f}")
    table: dict = {"all_prompts_area": float(full)}
    for strategy in rows[0]:
        for est in (e for e in ESTIMATORS if e in rows[0][strategy][str(sizes[0])]):
            cells = []
            entries = table.setdefault(strategy, {}).setdefault(est, {})
            for n in sizes:
                x = np.array([r[strategy][str(n)][est] for r in rows])
                b = np.array([r["random"][str(n)]["paper"] for r in rows])
                d = x - b
                t = sign_test(x, b)
                gap = full - b.mean()
                entries[str(n)] = {"difference": float(d.mean()), "wins": t["wins"], "losses": t["losses"],
                                   "p": float(t["p"]), "gap_closed": float(d.mean() / gap) if gap > 1e-9 else None,
                                   "area": float(x.mean())}
                cells.append(f"{d.mean():+.4f} ({t['wins']}/{t['losses']} p={t['p']:.3f})")
            print(f"{strategy:10s} {est:10s} " + " | ".join(cells))
    return table


if __name__ == "__main__":
    main()
