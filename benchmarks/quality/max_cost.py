"""`--max-cost C` on held-out data: is the realised mean cost per prompt within 5% above C?

RouterBench (benchmarks' shared dataset whose costs are USD per query and vary per prompt), split as the
evaluation protocol splits prompts (experiments.protocol.trial_split: 60% train, 10% validation, 30% test; every
model routable). Per trial: TF-IDF fitted on the training prompts, K-means clusters on them, Psi (per-cluster mean
loss) and the per-cluster model costs (routers.cluster.cluster_costs, as a build stores them) on the validation prompts,
each model's cost its mean over the validation prompts (model_val_costs). The test prompts play traffic: the
first half is the logged window the cap is calibrated on, the second half the traffic that arrives next. For caps
C from the cheapest to the priciest model's cost, routing with the lambda of
routers.budgets.cost_cap.lambda_for_max_cost (what route, replay and the pyfunc call) and reading each routed prompt's
own held-out cost:

- `logged`: the logged window routed at the lambda calibrated on it (the brief's "on logged traffic");
- `next`: the next half at the same lambda (calibrated on yesterday, served today);
- `validation`: the next half at the lambda calibrated on the validation prompts (calibration without traffic);
- `logged_model_cost`, `next_model_cost`: as `logged` and `next` with a router stored before per-cluster costs
  (the cap checked on each model's one mean cost): RouterBench's per-prompt costs follow prompt length, which
  routing by cluster concentrates.

Run: `.venv/bin/python -m benchmarks.quality.max_cost [--trials 5]`; writes benchmarks/results/max_cost.json.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from typing import Any

import numpy as np

from benchmarks.runner import RESULTS_DIR, SHARED, load_average, machine_info, write_result
from uniroute.embed import make_embedder
from uniroute.experiments.logs import eval_data_from_frame, long_frame
from uniroute.experiments.protocol import trial_split
from uniroute.routers.budgets.cost_cap import lambda_for_max_cost
from uniroute.routers.cluster.cluster_costs import cost_frame_of
from uniroute.routers.cluster.kmeans import fit_centroids
from uniroute.routers.router import Router

DATASET = "routerbench_subset"
K = 20
N_CAPS = 12
TOLERANCE = 0.05  # realised mean cost at most 5% above the cap


def _router(X: np.ndarray, scores: np.ndarray, costs: np.ndarray, models: tuple[str, ...], split: Any,
            embedder_id: str) -> Router:
    centroids = fit_centroids(X[split.train], K, seed=split.fit_seed)
    clusters = centroids.assign(X[split.val])
    losses = 1.0 - scores[split.val]  # (n_val, M)
    overall = losses.mean(axis=0)
    psi = np.empty((len(models), K))
    counts = np.zeros((len(models), K), dtype=np.int64)
    for k in range(K):
        here = clusters == k
        psi[:, k] = losses[here].mean(axis=0) if here.any() else overall  # an empty cluster: the overall loss
        counts[:, k] = here.sum()
    router = Router(embedder_id, models, costs[split.val].mean(axis=0), psi, centroids, counts)
    return router.with_cluster_costs(cost_frame_of(clusters, costs[split.val], models))


def _routed(router: Router, X: np.ndarray, lam: float, scores: np.ndarray, costs: np.ndarray) -> dict[str, float]:
    chosen = router.route(X, lam)
    rows = np.arange(len(chosen))
    expected = router.costs[chosen]  # what the cap was checked on: per cluster where the router keeps that
    if router.cost_scale is not None:
        expected = expected * router.cost_scale[chosen, router.assigner.assign(X)]
    return {"realised_cost": float(costs[rows, chosen].mean()), "expected_cost": float(expected.mean()),
            "realised_score": float(scores[rows, chosen].mean())}


def run_trial(data: Any, trial: int, seed: int) -> list[dict[str, Any]]:
    routing = data.routing
    split = trial_split(routing, seed, trial)
    texts = list(data.prompts)
    embedder = make_embedder("tfidf", fit_texts=[texts[i] for i in split.train], seed=split.fit_seed, progress=False)
    X = embedder.encode(texts)
    router = _router(X, routing.scores, routing.costs, routing.models, split, embedder.embedder_id)
    test = np.random.default_rng([seed, trial, 1]).permutation(split.test)
    logged, upcoming = test[: len(test) // 2], test[len(test) // 2 :]
    one_cost = replace(router, cost_scale=None)  # a router stored before per-cluster costs
    caps = np.geomspace(router.costs.min() * 1.01, router.costs.max(), N_CAPS)
    rows = []
    for cap in caps:
        on_traffic = lambda_for_max_cost(router, X[logged], float(cap))
        on_validation = lambda_for_max_cost(router, X[split.val], float(cap))
        by_model_cost = lambda_for_max_cost(one_cost, X[logged], float(cap))
        for variant, lam, prompts, by in (("logged", on_traffic, logged, router),
                                          ("next", on_traffic, upcoming, router),
                                          ("validation", on_validation, upcoming, router),
                                          ("logged_model_cost", by_model_cost, logged, one_cost),
                                          ("next_model_cost", by_model_cost, upcoming, one_cost)):
            got = _routed(by, X[prompts], lam, routing.scores[prompts], routing.costs[prompts])
            rows.append({"trial": trial, "cap": float(cap), "variant": variant, "lam": lam, "prompts": len(prompts),
                         **got, "ratio": got["realised_cost"] / float(cap),
                         "expected_ratio": got["expected_cost"] / float(cap)})
    return rows


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out = {}
    for variant in ("logged", "next", "validation", "logged_model_cost", "next_model_cost"):
        mine = [r for r in rows if r["variant"] == variant]
        ratios = np.array([r["ratio"] for r in mine])
        out[variant] = {"runs": len(mine), "max_ratio": float(ratios.max()), "median_ratio": float(np.median(ratios)),
                        "within_5pct": int((ratios <= 1 + TOLERANCE).sum()),
                        "max_expected_ratio": float(max(r["expected_ratio"] for r in mine))}
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    started, load_before, t0 = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), load_average(), time.perf_counter()
    data = eval_data_from_frame(long_frame(SHARED / DATASET))
    rows: list[dict[str, Any]] = []
    for trial in range(args.trials):
        rows += run_trial(data, trial, args.seed)
    result = {
        "benchmark": "quality.max_cost", "dataset": DATASET, "k": K, "trials": args.trials, "seed": args.seed,
        "caps_per_trial": N_CAPS, "tolerance": TOLERANCE, "summary": summary(rows), "rows": rows,
        "command": f".venv/bin/python -m benchmarks.quality.max_cost --trials {args.trials}",
        "started": started, "seconds": round(time.perf_counter() - t0, 1),
        "load_average_before": load_before, "load_average_after": load_average(), "machine": machine_info(),
    }
    path = write_result(result, RESULTS_DIR / "max_cost.json")
    for variant, figures in result["summary"].items():
        print(f"{variant}: realised/cap max {figures['max_ratio']:.4f}, median {figures['median_ratio']:.4f}, "
              f"{figures['within_5pct']}/{figures['runs']} within 5%")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
