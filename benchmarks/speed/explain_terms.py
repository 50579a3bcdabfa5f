"""What the ranked terms cost routing: `route` (the choice alone) against `route_terms` + `summary` (the choice,
fall-backs, expected score and cost: what every decisions frame now carries) and `explained` (`--explain`), on
synthetic routers of each shape: one-hot K-means with counts (K clusters), a soft map and K-NN.

Set-up (not timed): seeded random embeddings (n prompts, d = 64), M models, K = 20 clusters, K-NN over 2,000
references with k = 20. Measured: median wall seconds of `--repeats` calls on the n prompts.

Results: benchmarks/results/explain_terms.json. Run:
`OMP_NUM_THREADS=1 .venv/bin/python -m benchmarks.speed.explain_terms [--prompts 10000] [--models 11] [--repeats 5]`.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import numpy as np

from benchmarks.runner import RESULTS_DIR, load_average, machine_info, median, now_utc, timed, write_result
from uniroute.routers.cluster.kmeans import Centroids
from uniroute.routers.knn.neighbours import KnnRouter
from uniroute.routers.router import Router

RESULTS = RESULTS_DIR / "explain_terms.json"
DIM, CLUSTERS, REFS, NEIGHBOURS = 64, 20, 2000, 20
LAMBDA = 0.05  # a cost weight that mixes cheap and dear models (costs 0.1 to 10)


class _SoftMap:
    """A fixed softmax membership standing in for a LearnedMap (the shape of its output is what is timed)."""

    def __init__(self, w: np.ndarray) -> None:
        self.w, self.k, self.dim = w, w.shape[1], w.shape[0]

    def membership(self, X: np.ndarray) -> np.ndarray:
        z = X @ self.w
        e = np.exp(z - z.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)


def _routers(models: int, rng: np.random.Generator) -> dict[str, object]:
    names = tuple(f"m{i:02d}" for i in range(models))
    costs = rng.uniform(0.1, 10.0, models)
    psi = rng.uniform(0.0, 1.0, (models, CLUSTERS))
    counts = rng.integers(1, 50, (models, CLUSTERS))
    centers = rng.normal(size=(CLUSTERS, DIM)).astype(np.float32)
    refs = rng.normal(size=(REFS, DIM)).astype(np.float32)
    refs /= np.linalg.norm(refs, axis=1, keepdims=True)
    return {
        "kmeans_shrunk": Router("bench", names, costs, psi, Centroids(centers), counts, shrinkage=5.0),
        "soft_map": Router("bench", names, costs, psi, _SoftMap(rng.normal(size=(DIM, CLUSTERS))), counts),
        "knn": KnnRouter("bench", names, costs, rng.uniform(0, 1, (models, REFS)), refs,
                         tuple(f"p{i}" for i in range(REFS)), NEIGHBOURS),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=10_000)
    parser.add_argument("--models", type=int, default=11)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(args.prompts, DIM)).astype(np.float32)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    load_before = load_average()
    figures = {}
    lam = LAMBDA
    for kind, router in _routers(args.models, rng).items():
        route, _ = timed(lambda r=router: r.route(X, lam), args.repeats)
        summary, _ = timed(lambda r=router: r.route_terms(X, lam).summary(), args.repeats)
        explained, _ = timed(lambda r=router: r.route_terms(X, lam).explained(), args.repeats)
        same = bool(np.array_equal(router.route_terms(X, lam).chosen(), router.route(X, lam)))
        figures[kind] = {"route_s": median(route), "terms_and_summary_s": median(summary),
                         "terms_and_explained_s": median(explained), "same_choice": same,
                         "summary_prompts_per_s": round(args.prompts / median(summary))}
        print(kind, figures[kind])
    write_result({"benchmark": "explain_terms", "when": now_utc(), "machine": machine_info(),
                  "load_before": load_before, "load_after": load_average(), "prompts": args.prompts,
                  "models": args.models, "repeats": args.repeats, "routers": figures}, RESULTS)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
