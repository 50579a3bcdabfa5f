"""Evaluation wall time: 100 trials of `uniroute.evaluation` on mmlu_pro_cot29 with cached embeddings.

What is timed: `uniroute.evaluation.evaluate` as `uniroute.evaluation` runs it — a Dask LocalCluster of 2 worker
processes (one thread each) started, the embedding matrix scattered, one task per trial (every method: ZeroRouter,
the four router kinds with their per-trial hyper-parameter search, `auto`'s selection among them, the two
oracles; and, unless --no-val-sizes, the validation-size study at 25 and 50 validation prompts, as
docs/results.md runs it), the report assembled. The embedder is the default one (`static`) unless --embedder.
Not timed: reading and pivoting the long file, and embedding (the vectors come from the store's cache; this script
embeds them first if the cache is cold). Embedding throughput is benchmarks/speed/embedding.py's subject.

The 2 cores are shared with other work, so the load average before and after the run is recorded beside the
wall time, and the per-method seconds per trial (mean over trials, measured inside the workers) show where
the time goes; CPU seconds per trial are recorded too, since they move less with the load than wall time. The
target is under 8 minutes for 100 trials.

Run: `UNIROUTE_HOME=.uniroute OMP_NUM_THREADS=1 .venv/bin/python -m benchmarks.speed.evaluate [--trials 100]`;
results go to benchmarks/results/evaluate.json.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import time
from pathlib import Path

from benchmarks.runner import RESULTS_DIR, SHARED, load_average, machine_info, write_result
from uniroute import experiments as ev
from uniroute import operations
from uniroute.settings import Settings, apply_offline_environment

RESULTS = RESULTS_DIR / "evaluate.json"
VAL_SIZES = (25, 50)  # as tools/pages/results_doc.py runs the study


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="mmlu_pro_cot29")
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--embedder", default=Settings().embedder)
    parser.add_argument("--no-val-sizes", action="store_true", help="skip the validation-size study")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    settings = Settings()
    apply_offline_environment(settings)
    settings.home.mkdir(parents=True, exist_ok=True)

    data = ev.eval_data_from_frame(ev.long_frame(SHARED / args.dataset))
    t0 = time.perf_counter()
    X, embedder_id = operations.prompt_embeddings(operations.Context.of(settings), data.prompts, args.embedder,
                                                  args.seed)
    embed_seconds = time.perf_counter() - t0
    config = ev.EvalConfig(seed=args.seed, val_sizes=() if args.no_val_sizes else VAL_SIZES)

    load_before = load_average()
    started = time.perf_counter()
    report, _, _ = ev.evaluate(data, X, args.trials, config, workers=args.workers)
    wall = time.perf_counter() - started
    load_after = load_average()

    result = {
        "benchmark": "evaluate",
        "dataset": args.dataset,
        "n_prompts": data.routing.n_prompts,
        "n_models": len(data.routing.models),
        "embedder_id": embedder_id,
        "trials": args.trials,
        "workers": args.workers,
        "methods": list(config.methods),
        "val_sizes": list(config.val_sizes),
        "wall_seconds": round(wall, 1),
        "wall_minutes": round(wall / 60, 2),
        "target_minutes": 8,
        "seconds_per_trial_in_worker": round(report["trial_seconds_mean"], 2),
        "cpu_seconds_per_trial_in_worker": round(report["trial_cpu_seconds_mean"], 2),
        # What 100 trials would take with a whole core per worker (computed from the CPU seconds, not measured):
        # on shared cores the wall time above says more about the other jobs than about the evaluation.
        "cpu_bound_minutes_per_100_trials": round(report["trial_cpu_seconds_mean"] * 100 / args.workers / 60, 2),
        "method_seconds_per_trial": {k: round(v, 3) for k, v in report["method_seconds_mean"].items()},
        "embedding_lookup_seconds": round(embed_seconds, 1),
        "load_average_before": load_before,
        "load_average_after": load_after,
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "machine": machine_info(),
        "areas": {m: round(s["area"], 4) for m, s in report["methods"].items()},
        "command": f"UNIROUTE_HOME={settings.home} OMP_NUM_THREADS=1 .venv/bin/python -m benchmarks.speed.evaluate "
                   f"--dataset {args.dataset} --trials {args.trials} --workers {args.workers} "
                   f"--embedder {args.embedder}"
                   + (" --no-val-sizes" if args.no_val_sizes else ""),
    }
    write_result(result, args.out, indent=1)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
