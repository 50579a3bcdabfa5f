"""The one runner and measurement module of benchmarks/: `make bench` runs every benchmark in turn (main), and
every benchmark takes from here what it records: wall and CPU seconds, the load average, peak and current memory,
the machine and the commit measured, and its JSON in benchmarks/results/ (write_result).

Timings are noisy on this shared 2-core machine: each benchmark repeats its measurements and reports medians.
Run: `.venv/bin/python -m benchmarks.runner [--only speed.routing ...]`; one benchmark alone with
`.venv/bin/python -m benchmarks.<group>.<name> --help` for its options. Every measurement of benchmarks/ is named
below, in BENCHMARKS or ON_DEMAND; a module no listed one imports or launches is not a measurement and does not
belong here (tests/test_house.py).
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import logging
import os
import platform
import resource
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO / "benchmarks" / "results"  # where README, docs/ and tools/pages/ read the figures
SHARED = REPO.parent / "shared" / "datasets"
SINGLE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
# What `make bench` runs, in order (module names under benchmarks/); each writes benchmarks/results/<name>.json.
BENCHMARKS = ("speed.routing", "speed.route_command", "speed.recording", "speed.serving", "speed.ingest",
              "speed.embedding", "speed.evaluate", "speed.replay", "scale.pipeline", "speed.make_run_silence",
              "speed.short_paths", "speed.gateway")
# Measurements `make bench` leaves out, run one at a time with --only: hours of CPU (the paper's experiments, the
# Dask plane at 1M prompts), a file generated per run (ingest memory), or a check of one feature (the cost cap,
# explain's terms, the gateway losing a backend under load, where a gateway request's CPU goes).
ON_DEMAND = ("speed.ingest_memory", "speed.explain_terms", "scale.dask_plane", "quality.max_cost", "paper.extensions",
             "quality.default_setting", "speed.one_vector", "quality.conversation_message",
             "speed.gateway_failover", "speed.gateway_cpu", "quality.static_tuned_teacher",
             "quality.static_tuned_routing", "quality.auto_threshold")


def write_result(data: dict[str, Any], out: Path, indent: int = 2) -> Path:
    """Write a benchmark's figures as JSON to out (normally RESULTS_DIR / '<name>.json'), atomically."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=indent, default=str) + "\n")
    tmp.replace(out)
    return out


def timed(fn: Callable[[], object], repeats: int) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds of each of `repeats` calls."""
    walls, cpus = [], []
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return walls, cpus


def peak_rss_mb() -> dict[str, float]:
    """Peak resident set size so far of this process and of its waited-for children, in MB (Linux: KB units)."""
    return {
        "self": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "children": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1),
    }


def current_rss_mb() -> float:
    """Resident set size of this process now, in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS line in /proc/self/status")


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def median(values: Sequence[float]) -> float:
    return round(statistics.median(values), 3)


def rounded(seconds: dict[str, float]) -> dict[str, float]:
    return {k: round(v, 3) for k, v in seconds.items()}


def now_utc() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class RssWatchdog:
    """Ends the process (exit 3) with every thread's traceback on stderr when its RSS passes a limit."""

    def __init__(self, limit_mb: float, on_trip: Callable[[float], None], interval: float = 0.2) -> None:
        self.limit_mb, self.on_trip, self.interval = limit_mb, on_trip, interval
        self.highest_mb = 0.0
        self.window_mb = 0.0  # highest RSS since take_window() was last called
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-watchdog", daemon=True)

    def __enter__(self) -> RssWatchdog:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            rss = current_rss_mb()
            self.highest_mb = max(self.highest_mb, rss)
            self.window_mb = max(self.window_mb, rss)
            if rss > self.limit_mb:
                # Where the memory went is the finding: every thread's stack, then out (no cleanup could
                # be trusted to stay under the limit).
                print(f"watchdog: RSS {rss:.0f} MB > limit {self.limit_mb:.0f} MB", file=sys.stderr, flush=True)
                faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
                self.on_trip(rss)
                os._exit(3)

    def take_window(self) -> float:
        """The highest RSS (MB) seen since the previous call."""
        peak, self.window_mb = max(self.window_mb, current_rss_mb()), 0.0
        return peak


class RssTimeline(logging.Handler):
    """Every library log record with the RSS now and the highest RSS since the previous record: where memory peaks."""

    def __init__(self, watchdog: RssWatchdog) -> None:
        super().__init__(level=logging.INFO)
        self.watchdog, self.started, self.rows = watchdog, time.perf_counter(), []

    def emit(self, record: logging.LogRecord) -> None:
        self.rows.append({
            "seconds": round(time.perf_counter() - self.started, 1),
            "peak_rss_mb_before": round(self.watchdog.take_window(), 1),
            "rss_mb": round(current_rss_mb(), 1),
            "log": f"{record.name}: {record.getMessage()}"[:160],
        })


@dataclass
class Partial:
    """A section's figures, written to disk after every step so a killed section keeps what it measured."""

    path: Path
    data: dict[str, Any]

    def save(self) -> None:
        self.data["peak_rss_mb"] = peak_rss_mb()
        write_result(self.data, self.path)


def library_state() -> dict[str, Any]:
    """The commit measured, and library or SQL files changed since it (the code that actually ran)."""
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--", "uniroute", "sql"], cwd=REPO, capture_output=True, text=True
    ).stdout.splitlines()
    return {"git_commit": commit, "uncommitted_library_changes": dirty}


def machine_info() -> dict[str, Any]:
    """Where the figures come from."""
    cpu = next(
        (line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
         if line.startswith("model name")),
        platform.processor(),
    )
    mem_kb = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                  if line.startswith("MemTotal:"))
    versions = {}
    for name in ("duckdb", "numpy", "pandas", "pyarrow", "scikit-learn", "torch", "sentence-transformers",
                 "mlflow-skinny", "dask"):
        from importlib.metadata import PackageNotFoundError, version

        try:
            versions[name] = version(name)
        except PackageNotFoundError:
            versions[name] = None
    return {
        "nproc": os.cpu_count(),
        "affinity_cpus": len(os.sched_getaffinity(0)),
        "cpu": cpu,
        "memory_gb": round(mem_kb / 1024**2, 1),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "versions": versions,
        **library_state(),
        "threads": {k: os.environ.get(k) for k in SINGLE_THREAD},
    }


def main(argv: Sequence[str] | None = None) -> int:
    """`make bench`: every benchmark (or those named) in turn, each in its own process."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", choices=BENCHMARKS + ON_DEMAND, metavar="NAME",
                        help=f"run only these benchmarks, of: {', '.join(BENCHMARKS + ON_DEMAND)}")
    args = parser.parse_args(argv)
    failed = []
    for name in args.only or BENCHMARKS:
        started = time.perf_counter()
        print(f"== benchmarks.{name}", flush=True)
        code = subprocess.call([sys.executable, "-m", f"benchmarks.{name}"], cwd=REPO)
        print(f"== benchmarks.{name}: exit {code} after {time.perf_counter() - started:.0f} s", flush=True)
        if code:
            failed.append(name)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
