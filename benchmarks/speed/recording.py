"""What recording decisions costs serving (target: no more than 10% slower with recording on).

Set-up (not timed): the home of `speed.route_command` (synthetic logs, `uniroute build` with `--embedder`, default
static, `uniroute publish`) and its 10,000 new prompts.

Measured:
- **file**: `uniroute route --file` of `--file-prompts` prompts, each call a fresh process, recording on (the
  default: every decision to $UNIROUTE_HOME/spool/decisions) and off (`--no-log`), alternating, `--repeats` each;
  the medians of wall and of CPU seconds (the latter less blurred by other users of a shared machine), and ratios;
- **served**: the MLflow pyfunc's predict in this process (what `mlflow models serve` calls per request, without
  the HTTP layer), `--requests` requests of `--batch` prompts, with its spool and without; requests per second.

Results: benchmarks/results/recording.json. Run:
`OMP_NUM_THREADS=1 .venv/bin/python -m benchmarks.speed.recording [--repeats 5]`.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import time
from pathlib import Path

import pandas as pd

from benchmarks.runner import RESULTS_DIR, load_average, machine_info, now_utc, write_result
from benchmarks.speed.route_command import built_home, prompts_file, uniroute

RESULTS = RESULTS_DIR / "recording.json"


def served_rate(home: Path, prompts: list[str], requests: int, batch: int, record: bool) -> tuple[float, float]:
    """Requests per wall second and per CPU second of the pyfunc's predict on the champion, recording to home's
    spool or not (CPU seconds: less blurred by other users of a shared machine)."""
    from uniroute.pipeline.serving import route as serving
    from uniroute.pipeline.tracking.pyfunc import router_model_class, served_spool
    from uniroute.settings import Settings

    source = serving.routing_source(home / "uniroute.duckdb", home / "published")
    model = router_model_class()()
    model.router, model.embedder, model.router_id, model.X_val = (source.router, source.embedder(home / "cache"),
                                                                  source.router_id, None)
    model.spool, model.recording = served_spool(Settings(home=home, record_decisions=record))
    frames = [pd.DataFrame({"prompt": prompts[(i * batch) % len(prompts):][:batch]}) for i in range(requests)]
    model.predict(None, frames[0], params={})  # warm
    started, cpu_started = time.perf_counter(), time.process_time()
    for frame in frames:
        model.predict(None, frame, params={})
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
    if model.spool is not None:
        model.spool.close()
    return requests / seconds, requests / cpu_seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--embedder", default="static")
    parser.add_argument("--prompts", type=int, default=2000, help="prompts in the store's synthetic logs")
    parser.add_argument("--models", type=int, default=8)
    parser.add_argument("--file-prompts", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--batch", type=int, default=8, help="prompts per served request")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", type=Path, default=Path("/tmp/uniroute-bench-recording"),
                        help="scratch folder (never the repository)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    load_before = load_average()
    args.work.mkdir(parents=True, exist_ok=True)
    env = built_home(args.work, args)
    home = Path(env["UNIROUTE_HOME"])
    path, prompts = prompts_file(args.work, args.file_prompts, args.seed)
    uniroute(env, "route", "--file", str(path), "--no-log")  # warm the OS file cache and the stored embedder
    runs: dict[str, list[float]] = {"on": [], "off": []}
    cpu: dict[str, list[float]] = {"on": [], "off": []}
    for _ in range(args.repeats):
        for variant, extra in (("on", ()), ("off", ("--no-log",))):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            seconds, out = uniroute(env, "route", "--file", str(path), *extra)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            # CPU seconds of the process: what recording adds, less blurred than wall time on a shared machine
            cpu[variant].append(round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 3))
            if len(out.splitlines()) != len(prompts):
                raise RuntimeError(f"route --file answered {len(out.splitlines())} lines for {len(prompts)} prompts")
            runs[variant].append(round(seconds, 3))
    spooled = sum(len(p.read_text().splitlines()) for p in (home / "spool" / "decisions").glob("*.jsonl"))
    if spooled != args.repeats * len(prompts):
        raise RuntimeError(f"{spooled} records spooled for {args.repeats} recorded runs of {len(prompts)} prompts")
    on, off = statistics.median(runs["on"]), statistics.median(runs["off"])
    cpu_on, cpu_off = statistics.median(cpu["on"]), statistics.median(cpu["off"])
    rate_off, cpu_rate_off = served_rate(home, prompts, args.requests, args.batch, record=False)
    rate_on, cpu_rate_on = served_rate(home, prompts, args.requests, args.batch, record=True)
    result = {
        "benchmark": "recording",
        "date": now_utc(),
        "config": {"embedder": args.embedder, "store_prompts": args.prompts, "models": args.models,
                   "file_prompts": len(prompts), "repeats": args.repeats, "requests": args.requests,
                   "batch": args.batch, "seed": args.seed},
        "machine": machine_info() | {"load_average_before": load_before, "load_average_after": load_average()},
        "file": {"command": "uniroute route --file prompts.jsonl [--no-log]",
                 "recording_on_median_seconds": on, "recording_off_median_seconds": off,
                 "runs_on": runs["on"], "runs_off": runs["off"], "slowdown": round(on / off - 1, 4),
                 "cpu_seconds_on": cpu["on"], "cpu_seconds_off": cpu["off"],
                 "cpu_slowdown": round(cpu_on / cpu_off - 1, 4), "target_slowdown": 0.10},
        "served": {"what": f"pyfunc predict, {args.batch} prompts a request, in process",
                   "recording_on_requests_per_second": round(rate_on, 1),
                   "recording_off_requests_per_second": round(rate_off, 1),
                   "slowdown": round(rate_off / rate_on - 1, 4),
                   "recording_on_requests_per_cpu_second": round(cpu_rate_on, 1),
                   "recording_off_requests_per_cpu_second": round(cpu_rate_off, 1),
                   "cpu_slowdown": round(cpu_rate_off / cpu_rate_on - 1, 4), "target_slowdown": 0.10},
    }
    write_result(result, args.out)
    print(json.dumps(result["file"]), json.dumps(result["served"]), f"wrote {args.out}", sep="\n")


if __name__ == "__main__":
    main()
