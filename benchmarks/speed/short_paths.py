"""The short paths a person waits on, each a fresh process: `uniroute --help`, one prompt through `uniroute route`
(default embedder static) and `uniroute onboard --results FILE` of one model, with their phases.

Set-up (not timed): a UNIROUTE_HOME at `--work`/home gets synthetic logs (`--prompts` x `--models`, seed 0, one
model held back), `uniroute ingest`, `build` and `publish`; a pristine copy is kept beside it (`--reuse` starts
from that copy instead of building again). The held-back model's validation results are the onboarding's file.

Measured (wall seconds, `time.perf_counter` around `subprocess.run`; median of `--repeats` runs, all runs kept):
- **baseline**: `python -c pass` in the same run: what any Python command pays; each figure's ratio to it;
- **help**: `uniroute --help`;
- **route**: `uniroute route PROMPT --json` (a new process each time: imports, the published snapshot's
  serving.json and router, embedder load, decision and its record), and its phases from one in-process run (CPU
  seconds beside wall, so a loaded machine shows); beside it the route before those runs, the first after the store
  was written, which reads the store (and its phases: imports, store read, ...);
- **onboard**: `uniroute onboard --results FILE`, each run on a fresh copy of the built home (same path: MLflow's
  artifact locations stay valid), and its phases: ingest of the file, champion load, the evidence gate, the
  onboarding itself, the reconciliation after it (the store's side) and the start of the detached MLflow
  follow-up, each in wall and CPU seconds; beside them, how long that follow-up ran after the answer (the next copy
  waits for it).

Bytecode is written as for any user (PYTHONDONTWRITEBYTECODE is dropped). Timings come from a shared 2-core
machine: the load average before and after is recorded. Results: benchmarks/results/short_paths.json.

Run: `nice -n 10 .venv/bin/python -m benchmarks.speed.short_paths [--repeats 5] [--reuse]`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.runner import RESULTS_DIR, SINGLE_THREAD, load_average, machine_info, now_utc, write_result

RESULTS = RESULTS_DIR / "short_paths.json"
PROMPT = "What is the derivative of x squared plus three x?"
NEWCOMER = "newcomer"
TARGETS = {"help_seconds": 0.3, "route_seconds": 0.5, "onboard_seconds": 2.0}

# One `uniroute route` in process, its phases timed (wall and CPU), printed as JSON on the last line.
ROUTE_PHASES = """
import json, sys, time
marks = [("start", time.perf_counter(), time.process_time())]
def mark(name):
    marks.append((name, time.perf_counter(), time.process_time()))
import uniroute.cli
app = sys.modules["uniroute.cli.app"]
mark("import_cli")
settings = app.settings_from_env()
mark("settings")
from uniroute.operations.context import Context
from uniroute.pipeline.serving import route
ctx = Context.of(settings)
mark("import_routing")
source = route.routing_source(ctx.db_path, ctx.published_dir, cache_dir=ctx.cache_dir)
mark("store_read")
embedder = source.embedder(ctx.cache_dir)
mark("embedder_load")
X = embedder.encode([sys.argv[1]])
mark("embed_prompt")
batch = route.route_batch(source, [sys.argv[1]], embedder=embedder, recording=ctx.recording, cache_dir=ctx.cache_dir)
mark("decision")
from uniroute.pipeline.serving.records import Served, decision_records
from uniroute.pipeline.serving.spool import DecisionSpool
served = Served("cli", source.router_id, batch.embedder_id, source.publication_version)
with DecisionSpool(ctx.spool_dir) as spool:
    spool.write(decision_records(batch.decisions, batch.X, source.router, served, propensity=batch.propensity,
                                 explore=batch.explored))
mark("record")
print(json.dumps({b: {"wall": round(w1 - w0, 4), "cpu": round(c1 - c0, 4)}
                  for (_, w0, c0), (b, w1, c1) in zip(marks, marks[1:])}))
"""

# The same, answered as `uniroute route` answers once a route has read the store since its last write: from the
# published snapshot's serving.json (operations.route_quickly), no store, pandas or pydantic-settings.
QUICK_ROUTE_PHASES = """
import json, sys, time
marks = [("start", time.perf_counter(), time.process_time())]
def mark(name):
    marks.append((name, time.perf_counter(), time.process_time()))
import uniroute.cli
mark("import_cli")
from uniroute.environment import quick_settings
settings = quick_settings()
mark("settings")
from uniroute.operations.serving import route_quickly
from uniroute.pipeline.serving import quick_route, route
from uniroute.pipeline.serving.records import Served, decision_records, recording_of
from uniroute.pipeline.serving.spool import DecisionSpool
mark("import_routing")
found = quick_route.quick_source(settings.db_path, settings.published_dir, settings.cache_dir)
assert found is not None, "the quick path stepped aside"
mark("snapshot_read")
embedder = found.source.embedder(settings.cache_dir)
X = embedder.encode([sys.argv[1]])
mark("embed_prompt")
decided = route.decided_columns(found.source, [sys.argv[1]], embedder=embedder, recording=recording_of(settings),
                                resolved=found.default)
mark("decision")
served = Served("cli", found.source.router_id, decided.embedder_id, found.source.publication_version)
with DecisionSpool(settings.spool_dir) as spool:
    spool.write(decision_records(decided.plain_columns(), decided.X, found.source.router, served,
                                 propensity=decided.propensity, explore=decided.explored))
mark("record")
print(json.dumps({b: {"wall": round(w1 - w0, 4), "cpu": round(c1 - c0, 4)}
                  for (_, w0, c0), (b, w1, c1) in zip(marks, marks[1:])}))
"""

# `uniroute onboard ...` in process with its phases timed (wall, and CPU as "NAME_cpu"), printed as JSON on stderr's
# last line.
ONBOARD_PHASES = """
import functools, importlib, json, runpy, sys, time
spent = {}
def timed(module, attr, name):
    owner = importlib.import_module(module)
    inner = getattr(owner, attr)
    @functools.wraps(inner)
    def wrapper(*args, **kwargs):
        started, cpu = time.perf_counter(), time.process_time()
        try:
            return inner(*args, **kwargs)
        finally:
            spent[name] = round(spent.get(name, 0.0) + time.perf_counter() - started, 4)
            spent[name + "_cpu"] = round(spent.get(name + "_cpu", 0.0) + time.process_time() - cpu, 4)
    setattr(owner, attr, wrapper)
started, cpu = time.perf_counter(), time.process_time()
timed("uniroute.operations.pool", "ingest_file", "ingest_file")
timed("uniroute.operations.pool", "onboard_models", "onboard_models")
timed("uniroute.operations.pool", "reconciled", "reconcile_after")
timed("uniroute.pipeline.pool.registry", "load_champion", "load_champion")
timed("uniroute.pipeline.pool.onboard", "_gated", "evidence_gate")
timed("uniroute.operations.mlflow_after", "start_mlflow_sync", "start_mlflow_follow_up")
spent["harness_imports"] = round(time.perf_counter() - started, 4)
spent["harness_imports_cpu"] = round(time.process_time() - cpu, 4)
sys.argv = ["uniroute", *sys.argv[1:]]
try:
    runpy.run_module("uniroute", run_name="__main__")
except SystemExit as exc:
    if exc.code:
        raise
spent["command"] = round(time.perf_counter() - started - spent["harness_imports"], 4)
spent["command_cpu"] = round(time.process_time() - cpu - spent["harness_imports_cpu"], 4)
sys.stderr.write("\\nPHASES " + json.dumps(spent) + "\\n")
"""


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(env: dict[str, str], args: list[str], what: str) -> tuple[float, subprocess.CompletedProcess]:
    """Wall seconds of one process, and what it printed; raises with its stderr when it fails."""
    started, cpu = time.perf_counter(), _children_cpu()
    done = subprocess.run(args, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    # CPU seconds of the process (and of any it waited for): on a loaded machine, wall time is mostly waiting.
    done.cpu_seconds = round(_children_cpu() - cpu, 3)  # type: ignore[attr-defined]
    if done.returncode:
        raise RuntimeError(f"{what} failed ({done.returncode}): {done.stderr[-1500:]}")
    return seconds, done


def uniroute(env: dict[str, str], *args: str) -> tuple[float, subprocess.CompletedProcess]:
    return run(env, [str(Path(sys.executable).with_name("uniroute")), *args], f"uniroute {' '.join(args[:2])}")


def summary(runs: list[float], baseline: float, target: float | None = None) -> dict[str, Any]:
    """Median and runs, the ratio to the bare interpreter, and the target when there is one."""
    median = statistics.median(runs)
    out: dict[str, Any] = {"median_seconds": round(median, 3), "runs": [round(r, 3) for r in runs],
                           "ratio_to_bare_python": round(median / baseline, 1)}
    if target is not None:
        out |= {"target_seconds": target, "met": median <= target}
    return out


def built_home(work: Path, args: argparse.Namespace, env: dict[str, str]) -> Path:
    """work/home built and published (the held-back model's validation results in work/newcomer.parquet); a
    pristine copy beside it."""
    home, pristine = work / "home", work / "home.pristine"
    if args.reuse and pristine.exists():
        return pristine
    for path in (home, pristine):
        shutil.rmtree(path, ignore_errors=True)
    import pandas as pd

    uniroute(env, "synth", "--out", str(work / "logs"), "--prompts", str(args.prompts), "--models",
             str(args.models + 1), "--seed", "0", "--split")
    logs = pd.read_parquet(work / "logs" / "logs.parquet")
    held = sorted(logs.model.unique())[-1]
    logs[logs.model != held].to_parquet(work / "pool.parquet", index=False)
    val = logs[(logs.model == held) & (logs.split == "val")].drop(columns=["split"])
    val.assign(model=NEWCOMER).to_parquet(work / "newcomer.parquet", index=False)
    for step in (["ingest", str(work / "pool.parquet")], ["build"], ["publish"]):
        uniroute(env, *step)
    shutil.copytree(home, pristine, symlinks=True)
    return pristine


def follow_up_seconds(done: subprocess.CompletedProcess) -> float | None:
    """Seconds from the command's end until the MLflow follow-up it started (named on stderr) has finished; None
    when it started none. The home is not touched before: the follow-up is still writing to it."""
    said = re.search(r"MLflow: logging in the background \(pid (\d+)\)", done.stderr)
    if said is None:
        return None
    started, proc = time.perf_counter(), Path(f"/proc/{said.group(1)}")
    while proc.exists() and time.perf_counter() - started < 600:
        time.sleep(0.1)
    return round(time.perf_counter() - started, 3)


def fresh_copy(pristine: Path, home: Path) -> None:
    shutil.rmtree(home, ignore_errors=True)
    shutil.copytree(pristine, home, symlinks=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompts", type=int, default=2000, help="prompts in the store's synthetic logs")
    parser.add_argument("--models", type=int, default=8, help="models in the pool before the onboarding")
    parser.add_argument("--repeats", type=int, default=5, help="runs per measurement (the median is reported)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/uniroute-bench-short-paths"),
                        help="scratch folder (never the repository)")
    parser.add_argument("--reuse", action="store_true", help="start from the built home a previous run left")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    load_before = load_average()
    args.work.mkdir(parents=True, exist_ok=True)
    home = args.work / "home"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE" and not k.startswith("UNIROUTE_")}
    env |= SINGLE_THREAD | {"UNIROUTE_HOME": str(home), "UNIROUTE_EMBEDDER": "static", "UNIROUTE_SEED": "0"}
    pristine = built_home(args.work, args, env)
    fresh_copy(pristine, home)

    python = sys.executable
    bare = [run(env, [python, "-c", "pass"], "python")[0] for _ in range(args.repeats)]
    baseline = statistics.median(bare)
    uniroute(env, "--help")  # bytecode written once, as after an install
    help_runs = [uniroute(env, "--help") for _ in range(args.repeats)]
    # The first route after the store was written reads the store (and keeps what it found); the rest answer from
    # the published snapshot as long as nothing writes the store (pipeline/serving/quick_route.py).
    first_route = uniroute(env, "route", PROMPT, "--json")
    route_runs = [uniroute(env, "route", PROMPT, "--json") for _ in range(args.repeats)]
    helps, routes = [r[0] for r in help_runs], [r[0] for r in route_runs]
    route_phases = json.loads(run(env, [python, "-c", QUICK_ROUTE_PHASES, PROMPT], "route phases")[1].stdout
                              .strip().splitlines()[-1])
    store_route_phases = json.loads(run(env, [python, "-c", ROUTE_PHASES, PROMPT], "store route phases")[1].stdout
                                    .strip().splitlines()[-1])
    onboards, onboard_phases, follow_ups, onboard_cpu = [], [], [], []
    for _ in range(args.repeats):
        fresh_copy(pristine, home)
        seconds, done = uniroute(env, "onboard", "--results", str(args.work / "newcomer.parquet"))
        onboards.append(seconds)
        onboard_cpu.append(done.cpu_seconds)  # type: ignore[attr-defined]
        follow_ups.append(follow_up_seconds(done))
        fresh_copy(pristine, home)
        _, done = run(env, [python, "-c", ONBOARD_PHASES, "onboard", "--results",
                            str(args.work / "newcomer.parquet")], "onboard phases")
        follow_up_seconds(done)
        onboard_phases.append(json.loads(done.stderr.rsplit("\nPHASES ", 1)[1]))
    phases = {name: round(statistics.median(p.get(name, 0.0) for p in onboard_phases), 3)
              for name in onboard_phases[0] if not name.endswith("_cpu")}
    phases_cpu = {name: round(statistics.median(p.get(f"{name}_cpu", 0.0) for p in onboard_phases), 3)
                  for name in phases}

    result: dict[str, Any] = {
        "benchmark": "short_paths",
        "date": now_utc(),
        "config": {"embedder": "static", "store_prompts": args.prompts, "models": args.models,
                   "repeats": args.repeats, "prompt": PROMPT},
        "machine": machine_info() | {"load_average_before": load_before, "load_average_after": load_average()},
        "bare_python": {"command": "python -c pass", **summary(bare, baseline)},
        "help": {"command": "uniroute --help", **summary(helps, baseline, TARGETS["help_seconds"]),
                 "cpu_seconds": [r[1].cpu_seconds for r in help_runs]},  # type: ignore[attr-defined]
        "route": {"command": "uniroute route PROMPT --json (cold process, default router, decision recorded)",
                  **summary(routes, baseline, TARGETS["route_seconds"]), "phases_one_run": route_phases,
                  "cpu_seconds": [r[1].cpu_seconds for r in route_runs],  # type: ignore[attr-defined]
                  # The route before them: the first after the store was written reads it (DuckDB, pandas, the
                  # settings' pydantic), restores the embedder's file into the home's cache and keeps what it found.
                  "first_after_a_store_write": {
                      "seconds": round(first_route[0], 3),
                      "cpu_seconds": first_route[1].cpu_seconds,  # type: ignore[attr-defined]
                      "phases_one_run": store_route_phases}},
        "onboard": {"command": "uniroute onboard --results FILE (one model, the whole command)",
                    **summary(onboards, baseline, TARGETS["onboard_seconds"]),
                    "phases_median_wall": phases, "phases_median_cpu": phases_cpu, "cpu_seconds": onboard_cpu,
                    # The detached process that logs the run to MLflow after the answer (docs/decisions/0410):
                    # not part of the command's time, measured from the command's end until it exits.
                    "mlflow_follow_up_seconds_after_answer": follow_ups},
    }
    write_result(result, args.out)
    for name in ("bare_python", "help", "route", "onboard"):
        print(name, json.dumps({k: v for k, v in result[name].items() if k != "runs"}))
    print(f"load {load_before} -> {result['machine']['load_average_after']}; wrote {args.out}")


if __name__ == "__main__":
    main()
