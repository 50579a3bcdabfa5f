"""Replay speed: 1,000,000 logged decisions re-routed from a real store (target: under 60 s on this machine).

Inputs (synthetic, seeded): a DuckDB store holding 1M decision records (256-d float16 embeddings, as the serving
paths record them), outcomes for a tenth of them, and two K-means routers over 20 LLMs: the serving one (K = 50),
whose records keep their clusters, and another on a different clustering (K = 64), which must decode every
embedding and assign it. Timed: `uniroute.pipeline.traffic.replay.replay` (read the window in Arrow batches, decode the
blobs with numpy, route, estimate), wall and CPU seconds, median of the repeats; loading the records is not timed.

Run: `OMP_NUM_THREADS=1 nice .venv/bin/python -m benchmarks.speed.replay [--decisions 1000000] [--repeats 3]`;
results go to benchmarks/results/replay.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa

from benchmarks.runner import RESULTS_DIR, load_average, machine_info, now_utc, timed, write_result
from uniroute import store
from uniroute.pipeline.pool import registry
from uniroute.pipeline.traffic.replay import ReplayRouter, ReplayWindow, replay
from uniroute.routers.cluster.kmeans import Centroids
from uniroute.routers.router import Router

RESULTS = RESULTS_DIR / "replay.json"
EMBEDDER = "static:bench@1"


def _router(rng: np.random.Generator, models: list[str], k: int, d: int) -> Router:
    centers = rng.standard_normal((k, d)).astype(np.float32)
    centers /= np.linalg.norm(centers, axis=1, keepdims=True)
    psi = rng.uniform(0.05, 0.95, (len(models), k))
    counts = rng.integers(5, 60, (len(models), k))
    return Router(EMBEDDER, tuple(models), rng.uniform(0.001, 1.0, len(models)), psi, Centroids(centers),
                  psi_counts=counts)


def _records(rng: np.random.Generator, router: Router, router_id: str, n: int, d: int, start: int) -> pa.Table:
    X = rng.standard_normal((n, d)).astype(np.float32)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    clusters = router.prompt_clusters(X)
    chosen = router.route(X, 0.1)
    blobs = X.astype("<f2")
    embedding = pa.FixedSizeBinaryArray.from_buffers(pa.binary(2 * d), n, [None, pa.py_buffer(blobs.tobytes())])
    when = datetime(2026, 11, 1) + timedelta(seconds=start)
    return pa.table({
        "decision_id": [f"d{start + i:08d}" for i in range(n)],
        "decided_at": pa.array([when + timedelta(seconds=i) for i in range(n)], pa.timestamp("us")),
        "router_id": pa.array([router_id] * n), "cluster": pa.array(clusters.astype(np.int32)),
        "model": pa.array(np.asarray(router.models, dtype=object)[chosen].tolist()),
        "expected_score": 1.0 - router.routing_psi[chosen, clusters], "expected_cost": router.costs[chosen],
        "embedding": embedding.cast(pa.binary()), "embedding_dim": pa.array(np.full(n, d, dtype=np.int32)),
        "score": pa.array(np.where(rng.random(n) < 0.1, rng.integers(0, 2, n), np.nan)),
    })


def _load(db: Path, router: Router, n: int, d: int, seed: int) -> None:
    """The store: the routers and n decisions (with their outcomes), written in chunks."""
    rng = np.random.default_rng(seed)
    with store.session(db, "bench") as s:
        for rid, r in (("served", router), ("other", _router(rng, list(router.models), 64, d))):
            registry.save_router_version(s.con, registry.NewVersion(
                r, rid, registry.router_clustering_id(r), "kmeans", "bench", 0.5, rid == "served", "bench",
                centroids=r.assigner))
        for start in range(0, n, 200_000):
            part = _records(rng, router, "served", min(200_000, n - start), d, start)
            s.con.register("part", part)
            s.con.execute("""
                insert into decisions (decision_id, schema_version, decided_at, source, router_id, embedder_id,
                    text_hash, cluster, model, lam, setting, expected_score, expected_cost, propensity, explored,
                    embedding, embedding_dim, source_file, file_hash, ingested_at)
                select decision_id, 1, decided_at, 'file', router_id, ?, 'h', cluster, model, 0.1, 'lambda',
                       expected_score, expected_cost, 1.0, false, embedding, embedding_dim, 'bench', 'bench', now()
                from part""", [EMBEDDER])
            s.con.execute("""insert into outcomes select decision_id, score, null, null, null, 'bench', 'bench', now()
                             from part where not isnan(score)""")
            s.con.unregister("part")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--decisions", type=int, default=1_000_000)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--models", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    router = _router(rng, [f"llm-{i:02d}" for i in range(args.models)], 50, args.dim)
    load_before = load_average()
    runs = {}
    with tempfile.TemporaryDirectory(prefix="uniroute-replay-bench-") as tmp:
        db = Path(tmp) / "uniroute.duckdb"
        t0 = time.perf_counter()
        _load(db, router, args.decisions, args.dim, args.seed + 1)
        load_seconds = time.perf_counter() - t0
        with store.opened(db, read_only=True) as con:
            for name, rid, same in (("served router (logged clusters)", "served", {"served"}),
                                    ("another clustering (every embedding decoded and assigned)", "other", set())):
                version = registry.load_router_version(con, rid)
                using = ReplayRouter(rid, version.router, version.router.models, frozenset(same))
                result: dict = {}

                def once(using=using, result=result) -> None:
                    result["r"], _ = replay(con, using, ReplayWindow())

                walls, cpus = timed(once, args.repeats)
                r = result["r"]
                runs[name] = {"seconds_wall_median": round(statistics.median(walls), 3),
                              "seconds_cpu_median": round(statistics.median(cpus), 3),
                              "seconds_wall_all": [round(w, 3) for w in walls],
                              "decisions": r["overall"]["decisions"], "changed": r["overall"]["changed"],
                              "with_outcomes": r["outcomes"]["decisions"]}
                print(json.dumps({name: runs[name]}), flush=True)
    data = {"benchmark": "replay", "when": now_utc(), "target_seconds": 60,
            "config": {"decisions": args.decisions, "dim": args.dim, "models": args.models, "repeats": args.repeats,
                       "seed": args.seed},
            "load_seconds_untimed": round(load_seconds, 1), "runs": runs,
            "machine": {**machine_info(), "load_average_before": load_before, "load_average_after": load_average()}}
    write_result(data, args.out)


if __name__ == "__main__":
    main()
