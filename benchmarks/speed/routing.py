"""Routing throughput: decisions per second of `uniroute.routers.router.Router` beside a K-NN router, on one core.

Inputs (synthetic, seeded): 1M prompt embeddings (384-d, random, L2-normalised float32), 50 LLMs with random
Psi and costs, K = 50 centroids. UniRoute (K-means) routes by nearest centroid (float32 blocks of X @ C.T,
argmax of X.C - |C|^2/2) and a (K,) lookup table. The K-NN router (k = 50 nearest of 10,000 validation
prompts, `uniroute.routers.knn.neighbours.knn_gamma`, then the same argmin) is measured on a subset of the prompts and
extrapolated linearly to 1M (it is a per-prompt computation, so the time scales with the prompt count).
The LearnedMap router (numpy MLP, random weights: the time does not depend on their values) is measured on
a subset as well. Wall and CPU (process) seconds are both recorded: the machine's cores are shared, and
CPU seconds are what the router itself spent.

Run: `OMP_NUM_THREADS=1 .venv/bin/python -m benchmarks.speed.routing [--prompts 1000000] [--repeats 5]`;
results go to benchmarks/results/routing.json.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

from benchmarks.runner import RESULTS_DIR, load_average, machine_info, timed, write_result
from uniroute.routers.budgets.lambda_path import argmin_cheapest
from uniroute.routers.cluster.kmeans import Centroids
from uniroute.routers.cluster.learned_map import LearnedMap
from uniroute.routers.knn.neighbours import knn_gamma
from uniroute.routers.router import Router

RESULTS = RESULTS_DIR / "routing.json"


def normalised_embeddings(n: int, d: int, rng: np.random.Generator, chunk: int = 100_000) -> np.ndarray:
    """(n, d) float32 random unit vectors, generated in chunks to keep the peak memory near the output's."""
    out = np.empty((n, d), dtype=np.float32)
    for start in range(0, n, chunk):
        block = rng.standard_normal((min(chunk, n - start), d), dtype=np.float32)
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        out[start : start + block.shape[0]] = block
    return out


def summary(name: str, walls: list[float], cpus: list[float], measured_on: int, n: int, **extra) -> dict:
    """Median figures for `measured_on` prompts, scaled to n prompts when measured on fewer."""
    wall, cpu = statistics.median(walls), statistics.median(cpus)
    scale = n / measured_on
    result = {
        "router": name,
        "measured_on_prompts": measured_on,
        "extrapolated": measured_on != n,
        "seconds_wall_median": round(wall, 4),
        "seconds_cpu_median": round(cpu, 4),
        "seconds_wall_all": [round(s, 4) for s in walls],
        f"seconds_wall_for_{n}": round(wall * scale, 3),
        f"seconds_cpu_for_{n}": round(cpu * scale, 3),
        "decisions_per_second_wall": round(measured_on / wall),
        "decisions_per_second_cpu": round(measured_on / cpu),
        **extra,
    }
    print(json.dumps(result), flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=1_000_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--models", type=int, default=50)
    parser.add_argument("--clusters", type=int, default=50)
    parser.add_argument("--knn-k", type=int, default=50)
    parser.add_argument("--val", type=int, default=10_000, help="validation prompts the K-NN router searches")
    parser.add_argument("--knn-subset", type=int, default=20_000, help="prompts K-NN is timed on")
    parser.add_argument("--learned-subset", type=int, default=200_000, help="prompts LearnedMap is timed on")
    parser.add_argument("--repeats", type=int, default=5, help="runs per router (the median is reported)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    rng = np.random.default_rng(args.seed)
    n, d, m, k = args.prompts, args.dim, args.models, args.clusters

    X = normalised_embeddings(n, d, rng)  # (n, d)
    X_val = normalised_embeddings(args.val, d, rng)  # (n_val, d)
    costs = np.exp(rng.uniform(np.log(0.01), np.log(10.0), size=m))  # (M,) spread over three decades
    psi = rng.uniform(0.05, 0.95, size=(m, k))  # (M, K)
    centres = Centroids(X_val[rng.choice(args.val, size=k, replace=False)])  # K validation prompts as centres
    lam = 0.01
    kmeans_router = Router("synthetic", tuple(f"llm-{j:02d}" for j in range(m)), costs, psi, centres)
    pool = list(kmeans_router.models[::2])
    results = []
    load_before = load_average()
    with threadpool_limits(limits=1):  # one core
        kmeans_router.route(X[:10_000], lam)  # warm-up
        walls, cpus = timed(lambda: kmeans_router.route(X, lam), args.repeats)
        results.append(summary("uniroute-kmeans", walls, cpus, n, n, k=k))
        walls, cpus = timed(lambda: kmeans_router.route(X, lam, pool=pool), args.repeats)
        results.append(summary("uniroute-kmeans, pool of 25", walls, cpus, n, n, k=k))

        # K-NN: mean loss of the k nearest validation prompts, then the same cost-adjusted argmin.
        val_losses = (rng.uniform(size=(args.val, m)) < psi.mean(axis=1)).astype(np.float64)  # (n_val, M)
        sub = X[: args.knn_subset]
        all_models = np.arange(m)

        def knn_route() -> np.ndarray:
            return argmin_cheapest(knn_gamma(sub, X_val, val_losses, args.knn_k) + lam * costs, costs, all_models)

        walls, cpus = timed(knn_route, max(1, args.repeats // 2))
        results.append(summary("knn", walls, cpus, sub.shape[0], n, k_neighbours=args.knn_k, n_val=args.val))

        # LearnedMap: BN-folded MLP d -> 128 -> 128 -> K, softmax, gamma, argmin.
        h = 128
        lm = LearnedMap(
            w1=rng.standard_normal((d, h)) / np.sqrt(d), b1=np.zeros(h), w2=rng.standard_normal((h, h)) / np.sqrt(h),
            b2=np.zeros(h), w3=rng.standard_normal((h, k)) / np.sqrt(h), b3=np.zeros(k),
        )
        learned_router = Router("synthetic", kmeans_router.models, costs, psi, lm)
        sub = X[: args.learned_subset]
        walls, cpus = timed(lambda: learned_router.route(sub, lam), max(1, args.repeats // 2))
        results.append(summary("uniroute-learnedmap", walls, cpus, sub.shape[0], n, k=k))

    # The fast path must agree with the definition on a sample (a benchmark of a wrong answer is worthless).
    check = X[:5000]
    expected = argmin_cheapest(kmeans_router.gamma(check) + lam * costs, costs, np.arange(m))
    agree = float((kmeans_router.route(check, lam) == expected).mean())
    kmeans, knn = results[0], results[2]
    write_result({
        "benchmark": "routing",
        "config": {"prompts": n, "dim": d, "models": m, "clusters": k, "knn_k": args.knn_k, "val": args.val,
                   "lambda": lam, "repeats": args.repeats, "seed": args.seed},
        "machine": machine_info() | {"cpus": os.cpu_count(), "numpy": np.__version__,
                    "blas": [{key: i.get(key) for key in ("internal_api", "version", "architecture")}
                             for i in threadpool_info() if i.get("user_api") == "blas"],
                    "load_average_before": load_before,
                    "load_average_after": load_average()},
        "threads": {key: os.environ.get(key) for key in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")},
        "fast_path_agrees_with_gamma_argmin": agree,
        "kmeans_over_knn_speedup_wall": round(knn[f"seconds_wall_for_{n}"] / kmeans[f"seconds_wall_for_{n}"], 1),
        "results": results,
    }, args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
