"""Pilot: does a pool-referenced estimator of a newcomer's Psi make a chosen onboarding set beat random?

The paper's cell (the default): a test LLM's mean loss on the validation prompts it answered in the cluster.
The pool-referenced cell: the training LLMs' mean loss over every validation prompt of the cluster (the pool
answered them all) plus the test LLM's mean difference from the pool on the prompts it answered there, shrunk
toward its overall difference with the tuned strength (A). Same trials, same splits and tuning as
`uniroute evaluate --val-sizes ... --val-selection ...`; UniRoute (K-means); per strategy and size the Area of
each estimator, paired with random + the paper's estimator (the study's baseline).

Run: `OMP_NUM_THREADS=1 nice -n 15 .venv/bin/python -m benchmarks.quality.onboarding_estimator_pilot
      --data ../shared/datasets/routerdc_model7/long.parquet --trials 25 --out /tmp/pilot.json`
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from uniroute import experiments as ev
from uniroute import operations
from uniroute.cli.app import context, settings_from_env
from uniroute.experiments.onboarding_study import selected_split
from uniroute.routers.cluster.psi import psi_from_losses, shrunk_values
from uniroute.selection.curves import curve_area
from uniroute.selection.onboarding_order import PoolView, onboarding_order, prompt_disagreement
from uniroute.selection.scored_pool import LabelledPool
from uniroute.selection.split import mean_costs
from uniroute.selection.state import TrialState
from uniroute.selection.statistics import sign_test

KIND = "kmeans"  # --kind: plain UniRoute K-means (the onboarding study's) or kmeans_shrunk (the default router)
RESULTS = Path(__file__).resolve().parents[1] / "results" / "onboarding_estimator_pilot.json"


def referenced_cells(state: TrialState, k: int, n: int, strength: float) -> np.ndarray:
    """(M_te, K) pool-referenced Psi of the test LLMs onboarded on the first n validation prompts."""
    clusters = state.fits.val_cluster(k)  # (n_val,) every validation prompt, the chosen first
    pool = np.nanmean(state.losses[np.ix_(state.split.val, state.split.train_models)], axis=1)  # (n_val,)
    ref = np.bincount(clusters, weights=pool, minlength=k) / np.maximum(np.bincount(clusters, minlength=k), 1)
    empty = np.bincount(clusters, minlength=k) == 0
    if empty.any():  # no validation prompt in the cluster: the pool's loss on its training prompts
        tr = state.fits.train_cluster(k)
        tr_pool = np.nanmean(state.train_losses, axis=1)
        tr_ref = np.bincount(tr, weights=tr_pool, minlength=k) / np.maximum(np.bincount(tr, minlength=k), 1)
        ref[empty] = tr_ref[empty]
    diff = state.test_llm_val_losses(n) - pool[:n, None]  # (n, M_te)
    answered = ~np.isnan(diff)
    onehot = np.eye(k)[clusters[:n]]  # (n, K)
    sums = onehot.T @ np.where(answered, diff, 0.0)  # (K, M_te)
    counts = onehot.T @ answered.astype(float)
    overall = np.where(answered, diff, 0.0).sum(axis=0) / np.maximum(answered.sum(axis=0), 1)  # (M_te,)
    lead = (sums + strength * overall[None, :]) / np.maximum(counts + strength, 1e-12)
    lead = np.where(counts + strength > 0, lead, overall[None, :])
    return np.clip(ref[:, None] + lead, 0.0, 1.0).T


def disagree_split(state: TrialState, size: int):
    """`allocated` across clusters, within a cluster the prompts the pool disagrees on most first."""
    split = state.split
    n_val = len(split.val)
    k = int(state.tuned(KIND, n_val).value)
    centroids = state.centroids(k)
    view = PoolView.of(centroids.assign(state.X_train), state.train_losses, k)
    pool_val = state.losses[np.ix_(split.val, split.train_models)]
    dis = prompt_disagreement(pool_val)
    # allocated order gives the per-cluster counts; refill each cluster's slots with its most contested prompts
    order = onboarding_order("allocated", centroids.assign(state.X_val), view, size, seed=split.fit_seed)
    clusters = centroids.assign(state.X_val)
    first = []
    taken: dict[int, list[int]] = {}
    for i in order:
        c = int(clusters[i])
        if c not in taken:
            members = np.flatnonzero(clusters == c)
            taken[c] = list(members[np.argsort(-dis[members], kind="stable")])
        first.append(taken[c].pop(0))
    first = np.asarray(first)
    rest = np.setdiff1d(np.arange(n_val), first, assume_unique=True)
    return replace(split, val=split.val[np.concatenate([first, rest])])


def balanced_split(state: TrialState, size: int):
    """`allocated` across clusters; within a cluster a systematic sample along the pool's mean loss (each prefix
    spread over the cluster's easy-to-hard range: proportional strata, so the mean stays unbiased)."""
    split = state.split
    n_val = len(split.val)
    k = int(state.tuned(KIND, n_val).value)
    centroids = state.centroids(k)
    view = PoolView.of(centroids.assign(state.X_train), state.train_losses, k)
    pool_val = np.nanmean(state.losses[np.ix_(split.val, split.train_models)], axis=1)
    order = onboarding_order("allocated", centroids.assign(state.X_val), view, size, seed=split.fit_seed)
    clusters = centroids.assign(state.X_val)
    rng = np.random.default_rng(split.fit_seed)
    queues: dict[int, list[int]] = {}
    first = []
    for i in order:
        c = int(clusters[i])
        if c not in queues:
            members = np.flatnonzero(clusters == c)
            ranked = members[np.lexsort((rng.random(members.size), pool_val[members]))]
            offset = rng.random()
            seq, taken = [], np.zeros(members.size, bool)
            t = 1
            while len(seq) < members.size:
                u, f, j = 0.0, 0.5, t  # van der Corput (base 2): each prefix fills the gaps of the last
                while j:
                    u += f * (j & 1)
                    j >>= 1
                    f /= 2
                pos = int(((u + offset) % 1.0) * members.size)
                while taken[pos]:
                    pos = (pos + 1) % members.size
                taken[pos] = True
                seq.append(int(ranked[pos]))
                t += 1
            queues[c] = seq
        first.append(queues[c].pop(0))
    first = np.asarray(first)
    rest = np.setdiff1d(np.arange(n_val), first, assume_unique=True)
    return replace(split, val=split.val[np.concatenate([first, rest])])


def mixed_areas(state: TrialState, sizes: list[int]) -> dict[str, dict[str, float]]:
    """The serving case: the test LLMs join the training LLMs (whose Psi is on every validation prompt)."""
    sp = state.split
    models = np.concatenate([sp.train_models, sp.test_models])
    m_tr = sp.train_models.size
    test = sp.test[~np.isnan(state.data.scores[np.ix_(sp.test, models)]).any(axis=1)
                   & ~np.isnan(state.data.costs[np.ix_(sp.test, models)]).any(axis=1)]
    out: dict[str, dict[str, float]] = {}
    n_val = len(sp.val)
    for n in sizes + [n_val]:
        tuned = state.tuned(KIND, n)
        k = tuned.value
        clusters = state.fits.val_cluster(k)
        tr = psi_from_losses(clusters, state.losses[np.ix_(sp.val, sp.train_models)], k,
                             [str(i) for i in sp.train_models])
        te = psi_from_losses(clusters[:n], state.test_llm_val_losses(n), k, [str(i) for i in sp.test_models])
        values = np.vstack([tr.values, te.values])
        counts = np.vstack([tr.counts, te.counts])
        c = np.concatenate([mean_costs(state.data.costs[np.ix_(sp.val, sp.train_models)]),
                            mean_costs(state.data.costs[np.ix_(sp.val[:n], sp.test_models)])])
        pool = LabelledPool.of(state.data.scores[np.ix_(test, models)], state.data.costs[np.ix_(test, models)], c)
        member = np.eye(k)[state.centroids(k).assign(state.X[test])]
        paper = shrunk_values(values, counts, tuned.shrinkage)
        ref = paper.copy()
        ref[m_tr:] = referenced_cells(state, k, n, tuned.shrinkage)
        key = "all" if n == n_val else str(n)
        out[key] = {"paper": curve_area(pool.curve(member @ paper.T, state.config.n_lambdas)),
                    "refA": curve_area(pool.curve(member @ ref.T, state.config.n_lambdas))}
    return out


def areas(state: TrialState, sizes: list[int]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for n in sizes:
        pool = state.test_pool(n)
        tuned = state.tuned(KIND, n)
        k = tuned.value
        names = state.test_llm_names()
        psi = psi_from_losses(state.fits.val_cluster(k)[:n], state.test_llm_val_losses(n), k, names)
        member = state.test_onehot(k)
        gammas = {
            "paper": member @ shrunk_values(psi.values, psi.counts, tuned.shrinkage).T,
            # control for ref5: the same fixed strength toward the default pool prior (the test LLMs' own cells)
            "paper5": member @ shrunk_values(psi.values, psi.counts, 5.0).T,
            "ref0": member @ referenced_cells(state, k, n, 0.0).T,
            "refA": member @ referenced_cells(state, k, n, tuned.shrinkage).T,
            "ref5": member @ referenced_cells(state, k, n, 5.0).T,
        }
        out[str(n)] = {name: curve_area(pool.curve(g, state.config.n_lambdas)) for name, g in gammas.items()}
        out[str(n)]["shrinkage"] = tuned.shrinkage
    n_val = len(state.split.val)
    full = state.test_pool(n_val)
    out["all"] = {"paper": curve_area(state.kind_curve(state.tuned(KIND, n_val), n_val, full))}
    return out


def pilot_inputs(path: Path, prompt_part: str, seed: int, kind: str, sizes: list[int], embedder: str = "static"):
    """A pilot's evaluation config, routing data and prompt vectors (by default the static embedder)."""
    config = ev.EvalConfig(seed=seed, methods=(kind,), val_sizes=tuple(sizes))
    frame = ev.long_frame(path)
    data = ev.eval_data_from_frame(frame) if ev.has_costs(frame) else ev.unit_cost_data(frame)
    texts = ev.prompt_texts(data.prompts, prompt_part)
    X, _ = operations.prompt_embeddings(context(settings_from_env()), texts, embedder, seed)
    return config, data, X


def strategy_states(X: np.ndarray, data, config: ev.EvalConfig, trial: int, strategies: list[str],
                    size: int) -> dict[str, TrialState]:
    """One trial's state per prompt order: `random` the trial's own, the others its validation prompts reordered
    (the first `size` chosen by the strategy)."""
    split = ev.trial_split(data.routing, config.seed, trial, config.train_frac, config.val_frac)
    base = TrialState(X, data.routing, split, config)
    out = {}
    for strategy in strategies:
        if strategy == "random":
            out[strategy] = base
            continue
        if strategy == "balanced":
            chosen = balanced_split(base, size)
        elif strategy == "disagree":  # what identifies whom a newcomer resembles: contested prompts first
            chosen = disagree_split(base, size)
        else:
            chosen = selected_split(base, strategy, size)
        out[strategy] = TrialState(X, data.routing, chosen, config)
    return out


def main() -> None:
    global KIND  # areas() and the splits read the kind the run measures
    p = argparse.ArgumentParser()
    p.add_argument("--data", type=Path, required=True)
    p.add_argument("--trials", type=int, default=25)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--sizes", default="10,25,50,100")
    p.add_argument("--strategies", default="random,stratified,allocated,anchored,disagree")
    p.add_argument("--prompt-part", default="full")
    p.add_argument("--kind", default=KIND, help="kmeans (the study's) or kmeans_shrunk (the default router)")
    p.add_argument("--mixed", action="store_true", help="the serving case: test LLMs join the training pool")
    p.add_argument("--out", type=Path, required=True, help="the per-trial Areas (JSON)")
    p.add_argument("--from-raw", action="store_true", help="summarise an --out of an earlier run, run nothing")
    p.add_argument("--record", help="a name: the summary goes under it into " + str(RESULTS))
    a = p.parse_args()
    KIND = a.kind
    sizes = [int(s) for s in a.sizes.split(",")]
    if a.from_raw:
        rows = json.loads(a.out.read_text())
        sizes = [int(s) for s in rows[0]["random"] if s != "all"]
        _finish(a, rows, sizes)
        return
    config, data, X = pilot_inputs(a.data, a.prompt_part, a.seed, KIND, sizes)
    rows = []
    t0 = time.perf_counter()
    with threadpool_limits(1):
        for trial in range(a.trials):
            states = strategy_states(X, data, config, trial, a.strategies.split(","), max(sizes))
            row = {strategy: mixed_areas(st, sizes) if a.mixed else areas(st, sizes) for strategy, st in states.items()}
            rows.append(row)
            print(f"trial {trial} {time.perf_counter() - t0:.0f}s", flush=True)
    a.out.write_text(json.dumps(rows))
    _finish(a, rows, sizes)


def _finish(a: argparse.Namespace, rows: list, sizes: list[int]) -> None:
    """Print the summary and (--record) keep it in the results file with the command that made it."""
    out = {"against_random_paper": _summary(rows, sizes, False), "against_random_same": _summary(rows, sizes, True)}
    if a.record:
        results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
        results[a.record] = {
            "command": (f"python -m benchmarks.quality.onboarding_estimator_pilot --data {a.data} --trials {len(rows)} "
                        f"--seed {a.seed} --sizes {','.join(map(str, sizes))} --strategies {','.join(rows[0])}"
                        + (" --mixed" if a.mixed else "") + (f" --kind {a.kind}" if a.kind != "kmeans" else "")),
            "trials": len(rows), "seed": a.seed, **out}
        RESULTS.write_text(json.dumps(results, indent=1) + "\n")


def _summary(rows, sizes, same: bool) -> dict:
    """Each (strategy, estimator) against random with the paper's estimator, or (same) with the same estimator."""
    print("against random with the same estimator" if same else "against random with the paper's estimator")
    full = np.mean([r["random"]["all"]["paper"] for r in rows])
    print(f"trials {len(rows)}; all prompts Area {full:.4f}")
    table: dict = {"all_prompts_area": float(full)}
    for strategy in rows[0]:
        for est in (e for e in rows[0][strategy][str(sizes[0])] if e != "shrinkage"):
            cells = []
            entries = table.setdefault(strategy, {}).setdefault(est, {})
            for n in sizes:
                x = np.array([r[strategy][str(n)][est] for r in rows])
                b = np.array([r["random"][str(n)][est if same else "paper"] for r in rows])
                d = x - b
                t = sign_test(x, b)
                gap = full - b.mean()
                half = float(2 * d.std(ddof=1) / np.sqrt(len(d)))
                entries[str(n)] = {"difference": float(d.mean()), "half_width": half,
                                   "wins": t["wins"], "losses": t["losses"], "p": float(t["p"]),
                                   "gap_closed": float(d.mean() / gap) if gap > 1e-9 else None}
                cells.append(f"{d.mean():+.4f}±{2 * d.std(ddof=1) / np.sqrt(len(d)):.4f} "
                             f"({t['wins']}/{t['losses']} p={t['p']:.2f}, {100 * d.mean() / gap:.0f}%)")
            print(f"{strategy:10s} {est:6s} " + " | ".join(cells))
    return table


if __name__ == "__main__":
    main()
