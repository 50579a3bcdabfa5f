"""End-to-end pipeline timings: build, onboarding latency, publish, and a build at 1M prompts x 100 models.

Sections (each runs in its own child process, so its peak RSS is its own):

`mmlu` -- on `../shared/datasets/mmlu_pro_cot29/long.parquet` (12,032 prompts x 29 LLMs; the two Gemini
models have no cost and the build leaves them out):
  1. ingest the file into a fresh store, then `uniroute.pipeline.build.nightly.run_build` with MiniLM and MLflow on,
     once on a cold embedding cache (12,032 prompts embedded) and `--warm-repeats` times on the warm cache (the same
     store). Per-stage seconds are BuildResult.seconds. MiniLM's weights are loaded (and timed) before the
     cold build, so neither build includes that one-off per-process load.
  2. onboarding latency: a second store gets the logs without one model (default: the costed model with the
     best mean score, `make run`'s rule among costed models), its embedding cache is seeded with the
     first store's vectors (same texts, same embedder id: no re-embedding) and it is built. 1,000 of the
     held-back model's results on prompts whose stored split is 'val' are written to a Parquet file. Each
     repeat copies the built home folder, drops the file into the copy's inbox and times from
     `process_inbox` (the file landing) to `onboard_models` returning the child router that contains the
     model, with the MLflow run and without it (tracking_uri None). The validation prompts are already in
     the store and clustered, so onboarding embeds nothing (the common case: a new LLM answers the existing
     validation set). A fresh-process variant times `uniroute onboard --results FILE` as a subprocess.
  3. publish: `publish_champion(..., force=True)` on the onboarded copy, with and without MLflow.

`startup` -- import seconds of a fresh process (uniroute.cli; ingest and onboard; mlflow): what the CLI
variant of onboarding pays on top of the in-process latency.

`synthetic` -- `uniroute.synth.write_synthetic_logs` writes `--prompts` x `--models` long Parquet logs; they
are ingested as `--ingest-parts` files (row groups are whole prompts), then the build runs as `uniroute build` does (the
build session, then the MLflow sync) with `--embedder` (default static; its model file is built once into
`--work`/cache; MiniLM at ~100 prompts/s on this CPU would take hours on 1M prompts). Above build.TUNING_SAMPLE
training prompts the router kinds are tuned on that many and the served one-hot router's K-means is refitted on
all of them on Dask. Peak RSS (ru_maxrss of the process and of its children) is recorded after every step; a
watchdog ends the section with a traceback if the RSS passes `--max-rss-gb` (the machine is shared).

Timings are wall seconds on a shared, contended 2-core machine: repeated figures are medians, the load
average at the start and end of each section is recorded. Results: benchmarks/results/pipeline.json (a
section that is not run keeps its previous figures there).

Run: `OMP_NUM_THREADS=1 .venv/bin/python -m benchmarks.scale.pipeline [--skip-mmlu] [--skip-1m] [--skip-startup]
[--prompts 1000000 --models 100] [--warm-repeats 3] [--onboard-repeats 3] [--publish-repeats 3]`; one section
alone by skipping the others (the section modules, `mmlu` and `synthetic`, import nothing from here).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.runner import (
    REPO,
    RESULTS_DIR,
    SINGLE_THREAD,
    Partial,
    library_state,
    load_average,
    machine_info,
    median,
    now_utc,
    peak_rss_mb,
    write_result,
)
from benchmarks.scale.mmlu import run_mmlu
from benchmarks.scale.synthetic import run_synthetic

RESULTS = RESULTS_DIR / "pipeline.json"
SECTIONS = ("mmlu", "synthetic", "startup")

log = logging.getLogger("benchmarks.scale")


IMPORT_PROBE = """
import json, time
t0 = time.perf_counter()
from uniroute.settings import apply_offline_environment
apply_offline_environment()
import uniroute.cli
t1 = time.perf_counter()
import uniroute.ingest, uniroute.pipeline.pool.onboard
t2 = time.perf_counter()
import mlflow, mlflow.pyfunc
t3 = time.perf_counter()
print(json.dumps({"cli": t1 - t0, "ingest_and_onboard": t2 - t1, "mlflow": t3 - t2}))
"""


def run_startup(args: argparse.Namespace, out: Partial) -> None:
    """Import seconds a fresh process pays before onboarding (what `uniroute onboard` adds to the latency)."""
    runs = []
    for _ in range(max(3, args.onboard_repeats)):
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", IMPORT_PROBE], capture_output=True, text=True, check=True)
        figures = {k: round(v, 3) for k, v in json.loads(done.stdout.strip().splitlines()[-1]).items()}
        figures["process_wall"] = round(time.perf_counter() - t0, 3)
        runs.append(figures)
    out.data["import_seconds"] = {"runs": runs, "median": {k: median([r[k] for r in runs]) for k in runs[0]}}


# ----------------------------------------------------------------------------------------- driver


def run_section(args: argparse.Namespace) -> int:
    """Child process: one section, figures to args.partial."""
    from uniroute.settings import apply_offline_environment

    apply_offline_environment()
    out = Partial(args.partial, {"section": args.section, "started": now_utc(), "load_average_start": load_average(),
                                 "library_at_start": library_state()})
    out.save()
    t0 = time.perf_counter()
    {"mmlu": run_mmlu, "synthetic": run_synthetic, "startup": run_startup}[args.section](args, out)
    out.data.update(seconds_total=round(time.perf_counter() - t0, 1), finished=now_utc(),
                    load_average_end=load_average(), library_at_end=library_state())
    out.save()
    return 0


def child_command(args: argparse.Namespace, section: str, partial: Path) -> list[str]:
    cmd = [sys.executable, "-m", "benchmarks.scale.pipeline", "--section", section, "--partial", str(partial),
           "--work", str(args.work), "--seed", str(args.seed)]
    for name in ("warm_repeats", "onboard_repeats", "publish_repeats", "onboard_results", "mmlu_limit", "prompts",
                 "models", "topics", "ingest_parts", "max_rss_gb", "embedder"):
        cmd += [f"--{name.replace('_', '-')}", str(getattr(args, name))]
    for flag in ("profile", "keep_logs", "reuse_store"):
        if getattr(args, flag):
            cmd.append(f"--{flag.replace('_', '-')}")
    if args.holdout:
        cmd += ["--holdout", args.holdout]
    return cmd


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--skip-mmlu", action="store_true", help="skip the mmlu_pro_cot29 section")
    parser.add_argument("--skip-1m", action="store_true", help="skip the large synthetic build")
    parser.add_argument("--skip-startup", action="store_true", help="skip the fresh-process import timings")
    parser.add_argument("--prompts", type=int, default=1_000_000)
    parser.add_argument("--models", type=int, default=100)
    parser.add_argument("--topics", type=int, default=16)
    parser.add_argument("--ingest-parts", type=int, default=10,
                        help="ingest the synthetic logs as this many files (one 100M-row file needs ~15 GB)")
    parser.add_argument("--warm-repeats", type=int, default=3)
    parser.add_argument("--onboard-repeats", type=int, default=3)
    parser.add_argument("--publish-repeats", type=int, default=3)
    parser.add_argument("--onboard-results", type=int, default=1000)
    parser.add_argument("--mmlu-limit", type=int, default=0, help="only the first N mmlu prompts (smoke runs)")
    parser.add_argument("--holdout", default=None, help="model to hold back for onboarding (default: best costed)")
    parser.add_argument("--max-rss-gb", type=float, default=12.0)
    parser.add_argument("--profile", action="store_true", help="cProfile the synthetic build")
    parser.add_argument("--reuse-store", action="store_true",
                        help="build on the synthetic store ingested by an earlier run with the same sizes")
    parser.add_argument("--keep-logs", action="store_true", help="keep the synthetic Parquet logs")
    parser.add_argument("--embedder", default="static",
                        help="embedder of the synthetic build (static, tfidf, minilm-onnx, minilm)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", type=Path, default=Path("/tmp/uniroute-bench-pipeline"),
                        help="scratch folder for the UNIROUTE_HOMEs (never the repository)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--section", choices=SECTIONS, help=argparse.SUPPRESS)
    parser.add_argument("--partial", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.work = args.work.resolve()
    if REPO in (args.work, *args.work.parents):
        parser.error(f"--work {args.work} is inside the repository; use a scratch folder")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    if args.section:
        return run_section(args)

    for key, value in SINGLE_THREAD.items():
        os.environ.setdefault(key, value)
    previous = json.loads(args.out.read_text()) if args.out.exists() else {}
    report: dict[str, Any] = {
        "benchmark": "pipeline",
        "description": __doc__.split("\n\n")[0],
        "machine": machine_info(),
        "sections": previous.get("sections", {}),
    }
    sections = (("mmlu", args.skip_mmlu), ("startup", args.skip_startup), ("synthetic", args.skip_1m))
    wanted = [s for s, skip in sections if not skip]
    failed = []
    args.work.mkdir(parents=True, exist_ok=True)
    for section in wanted:
        partial = args.work / f"{section}.json"
        partial.unlink(missing_ok=True)
        cmd = child_command(args, section, partial)
        t0 = time.perf_counter()
        code = subprocess.call(cmd)
        figures = json.loads(partial.read_text()) if partial.exists() else {}
        figures.update(
            exit_code=code,
            wall_seconds=round(time.perf_counter() - t0, 1),
            command=" ".join([Path(sys.executable).name, "-m", "benchmarks.scale.pipeline", *(argv or sys.argv[1:])]),
            child_command=" ".join(cmd[1:]),
            children_peak_rss_mb_so_far=peak_rss_mb()["children"],
        )
        report["sections"][section] = figures
        if code:
            failed.append(section)
        write_result(report, args.out)
        print(f"{section}: exit {code}, {figures['wall_seconds']} s -> {args.out}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
