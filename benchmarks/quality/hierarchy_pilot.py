"""Pilot: a servable form of "Psi from several K" (issue 28, item 4) — Psi smoothed over a cluster hierarchy.

The ensemble pilot (benchmarks/quality/ensemble_pilot.py) found count-aware K-means' gamma averaged over three
K-means clusterings (K/2, K, 2K) above `auto` on two of three datasets and level on the third. Serving that needs
three clusterings and a model row in each. This pilot asks whether one clustering gets the same: the fine
clustering (K_f = 2K) keeps its Psi cells as measured, and routes by the mean of three levels of each cell:
  the cell itself, its group among K groups, and its group among K/2 groups,
a group being the fine clusters whose centres fall nearest one centre of the K (or K/2) K-means clustering, and a
group's cell the count-weighted mean of its fine cells (so a new model's row still is its fine per-cluster mean:
onboarding, storage and explain stay those of one clustering). Each level is shrunk toward the pool prior with
the tuned strength s, as count-aware K-means does. `multik` (the ensemble pilot's three clusterings) is
recomputed beside it as the check that this pilot's trials are the ensemble pilot's.

Per trial of `uniroute evaluate`'s protocol (its TrialState: seed, splits and embedder of the recorded evaluation
docs/results/<dataset>.json, count-aware K-means tuned as there), paired against `auto` and count-aware K-means
as recorded in that evaluation (the ensemble pilot reproduced both in every trial on this code).

Run: `UNIROUTE_HOME=<home with the embedder's cached vectors> OMP_NUM_THREADS=1 .venv/bin/python -m
benchmarks.quality.hierarchy_pilot --dataset mmlu_pro_cot29 --trials 100`
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from benchmarks.quality.ensemble_pilot import multi_k_test_gamma, recorded_inputs
from uniroute import experiments as ev
from uniroute.routers.cluster.psi import psi_from_losses, shrunk_values
from uniroute.routers.kinds import Tuned
from uniroute.selection.curves import curve_area
from uniroute.selection.state import TrialState
from uniroute.selection.statistics import sign_test

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results" / "hierarchy_pilot.json"


def group_cells(values: np.ndarray, counts: np.ndarray, groups: np.ndarray, n_groups: int,
                strength: float) -> np.ndarray:
    """(M, K_f) each fine cell's group cell: the count-weighted mean of the group's measured cells, shrunk by
    `strength` toward the pool prior at the group level, read back per fine cell."""
    onehot = np.eye(n_groups)[groups]  # (K_f, G)
    g_counts = counts @ onehot  # (M, G)
    g_sums = (values * counts) @ onehot
    g_values = np.where(g_counts > 0, g_sums / np.maximum(g_counts, 1), 0.0)
    # Empty group cells: shrunk_values' pool prior fills them as it fills empty cells.
    return shrunk_values(g_values, g_counts.astype(np.int64), strength)[:, groups]


def hierarchy_gamma(state: TrialState, km: Tuned, n_val: int) -> tuple[int, np.ndarray]:
    """(K_f, (n_te, M_te) gamma) of the fine clustering routed by the mean of its three levels."""
    n_tr = state.X_train.shape[0]
    k = km.value
    k_fine = min(2 * k, n_tr)
    fine = state.centroids(k_fine)
    psi = psi_from_losses(state.fits.val_cluster(k_fine)[:n_val], state.test_llm_val_losses(n_val), k_fine,
                          state.test_llm_names())
    levels = [shrunk_values(psi.values, psi.counts, km.shrinkage)]
    for k_group in sorted({k, max(1, k // 2)}):
        groups = state.centroids(k_group).assign(fine.centers)
        levels.append(group_cells(psi.values, psi.counts, groups, k_group, km.shrinkage))
    routing = np.mean(levels, axis=0)  # (M, K_f)
    return k_fine, state.test_onehot(k_fine) @ routing.T


def trial_row(X: np.ndarray, data, config: ev.EvalConfig, trial: int) -> dict:
    split = ev.trial_split(data.routing, config.seed, trial, config.train_frac, config.val_frac)
    state = TrialState(X, data.routing, split, config)
    n_val = len(split.val)
    pool = state.test_pool(n_val)
    km = state.tuned("kmeans_shrunk", n_val)
    k_fine, g_hier = hierarchy_gamma(state, km, n_val)

    def area(g: np.ndarray) -> float:
        return curve_area(pool.curve(g, config.n_lambdas))

    return {"trial": trial, "K": km.value, "s": km.shrinkage, "K_fine": k_fine,
            "area": {"kmeans_shrunk": area(state.test_gamma(km, n_val)), "hierarchy": area(g_hier),
                     "multik": area(multi_k_test_gamma(state, km, n_val)),
                     "zero": curve_area(state.zero_curve(n_val, pool))}}


def summary(rows: list[dict], recorded: dict) -> dict:
    """Each variant against the recorded `auto` of the same trials, with its share of the ZeroRouter-to-MLP gap."""
    trials = [r["trial"] for r in rows]
    rec = {m: np.asarray(recorded["per_trial_area"][m])[trials] for m in ("auto", "mlp", "kmeans_shrunk", "zero")}
    zero, mlp, auto = float(rec["zero"].mean()), float(rec["mlp"].mean()), rec["auto"]
    out: dict = {"trials": len(rows), "zero": zero, "mlp": mlp, "auto": float(auto.mean()),
                 "auto_gap_share": float((auto.mean() - zero) / (mlp - zero)),
                 "reproduced": {m: int(np.sum(np.isclose([r["area"][m] for r in rows], rec[m], atol=1e-9)))
                                for m in ("kmeans_shrunk", "zero")},
                 "variants": {}}
    print(f"trials {len(rows)}; zero {zero:.4f} MLP {mlp:.4f} auto {auto.mean():.4f} "
          f"({100 * out['auto_gap_share']:.0f}% of the gap); reproduced {out['reproduced']}")
    for name in ("kmeans_shrunk", "multik", "hierarchy"):
        x = np.array([r["area"][name] for r in rows])
        t = sign_test(x, auto)
        v = {"area": float(x.mean()), "minus_auto": float((x - auto).mean()), "wins": t["wins"],
             "losses": t["losses"], "p": t["p"], "gap_share": float((x.mean() - zero) / (mlp - zero))}
        out["variants"][name] = v
        print(f"{name:14s} {v['area']:.4f} {v['minus_auto']:+.4f} {t['wins']}-{t['losses']} p={t['p']:.3g} "
              f"gap {100 * v['gap_share']:.0f}%")
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--dataset", required=True, help="a folder of ../shared/datasets with docs/results/<it>.json")
    p.add_argument("--trials", type=int, default=100)
    p.add_argument("--record", action="store_true", help="keep the summary under the dataset in " + str(RESULTS))
    a = p.parse_args()
    recorded = json.loads((ROOT / "docs" / "results" / f"{a.dataset}.json").read_text())
    config = ev.EvalConfig(seed=recorded["seed"], methods=("kmeans_shrunk",))
    data, X = recorded_inputs(recorded)
    rows, t0 = [], time.perf_counter()
    with threadpool_limits(1):
        for trial in range(a.trials):
            rows.append(trial_row(X, data, config, trial))
            print(f"trial {trial} {time.perf_counter() - t0:.0f}s", flush=True)
    out = summary(rows, recorded)
    if a.record:
        results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
        results[a.dataset] = {"command": f"python -m benchmarks.quality.hierarchy_pilot --dataset {a.dataset} "
                                         f"--trials {len(rows)}", "seed": recorded["seed"],
                              "embedder_id": recorded["embedder_id"], **out, "per_trial": rows}
        RESULTS.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
