"""`make run` or `uniroute build` as a user watches it: the longest stretch with no new output line (target:
no phase silent over 10 s, the time after which a user thinks it is stuck).

Runs `python -m deployments.demo` (what `make run` runs; `--command build`: `uniroute ingest` of the RouterBench
subset, then `uniroute build`, timing the build only) in a fresh UNIROUTE_HOME under `--work`, unbuffered, and
stamps every output line as it arrives (stdout and stderr merged, as on a terminal). Records the wall seconds, the
number of lines, the longest gaps between consecutive lines and the line each gap came after. `--cold` starts from
a new home, as the first `make run` after `make env` does (the environment's built embedder files and empty Prefect
and MLflow databases are there, nothing of the home's own); by default the demo's own rule applies: a rerun keeps
`cache/`.

Results: benchmarks/results/make_run_silence.json (`build_silence.json` for the build). Target: the longest gap
under 10 s (on a quiet machine: the load average before and after is recorded; under load every phase stretches).

Run: `OMP_NUM_THREADS=1 .venv/bin/python -m benchmarks.speed.make_run_silence [--command build] [--cold] [--work DIR]`.
"""

from __future__ import annotations

import argparse
import os
import pty
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.runner import REPO, RESULTS_DIR, SINGLE_THREAD, load_average, machine_info, now_utc, write_result

RESULTS = {"make-run": RESULTS_DIR / "make_run_silence.json", "build": RESULTS_DIR / "build_silence.json"}
DEMO = [sys.executable, "-m", "deployments.demo"]
BUILD_DATA = REPO.parent / "shared" / "datasets" / "routerbench_subset" / "long.parquet"
TARGET_SECONDS = 10.0


def stamped_lines(command: list[str], env: dict[str, str]) -> tuple[list[tuple[float, str]], int]:
    """Every output line of command with the seconds since its start when it arrived, and its exit code."""
    started = time.monotonic()
    proc = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, bufsize=1)
    lines = [(time.monotonic() - started, line.rstrip("\n")) for line in proc.stdout]
    return lines, proc.wait()


def stamped_terminal_updates(command: list[str], env: dict[str, str]) -> tuple[list[tuple[float, str]], int]:
    """As stamped_lines, with command's stdout and stderr on a pseudo-terminal, as a user at a terminal sees it: a
    bar or a ticking line redrawn in place (ending in a carriage return) counts as new output."""
    master, slave = pty.openpty()
    started = time.monotonic()
    proc = subprocess.Popen(command, cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave)
    os.close(slave)
    updates: list[tuple[float, str]] = []
    pending = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: every writer closed the terminal
            break
        if not chunk:
            break
        pending += chunk
        *complete, pending = re.split(rb"[\r\n]", pending)
        now = time.monotonic() - started
        updates += [(now, text.decode(errors="replace")) for text in complete if text.strip()]
    os.close(master)
    if pending.strip():
        updates.append((time.monotonic() - started, pending.decode(errors="replace")))
    return updates, proc.wait()


def gaps(lines: list[tuple[float, str]], top: int = 5) -> list[dict]:
    """The `top` longest silences: seconds, and the line after which nothing was printed for that long."""
    found = [{"seconds": round(b[0] - a[0], 1), "after": a[1][:160], "at": round(a[0], 1)}
             for a, b in zip(lines, lines[1:], strict=False)]
    if lines:
        found.insert(0, {"seconds": round(lines[0][0], 1), "after": "(start)", "at": 0.0})
    return sorted(found, key=lambda g: -g["seconds"])[:top]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, default=Path("/tmp/uniroute-bench-make-run"))
    parser.add_argument("--command", choices=list(RESULTS), default="make-run",
                        help="what to watch: the demo `make run` runs, or `uniroute build` on the RouterBench subset")
    parser.add_argument("--cold", action="store_true", help="start from a new home (its cache dropped too)")
    parser.add_argument("--out", type=Path, default=None, help="result JSON (default: per command, in "
                                                                "benchmarks/results/)")
    args = parser.parse_args(argv)
    out = args.out or RESULTS[args.command]
    home = args.work / args.command / "home"
    if args.cold and home.exists():
        shutil.rmtree(home)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "UNIROUTE_", "MLFLOW_"))}
    env.update(SINGLE_THREAD, UNIROUTE_HOME=str(home), PYTHONUNBUFFERED="1")  # unbuffered: lines arrive when said
    command = DEMO
    if args.command == "build":
        uniroute = [sys.executable, "-m", "uniroute"]
        ingested, code = stamped_lines([*uniroute, "ingest", str(BUILD_DATA)], env)
        if code:
            sys.exit("the ingest failed:\n" + "\n".join(line for _, line in ingested[-30:]))
        command = [*uniroute, "build"]
    load_before = load_average()
    started = time.perf_counter()
    # The build is watched on a terminal, where its progress is drawn (off one the CLI logs it only with -v).
    watch = stamped_terminal_updates if args.command == "build" else stamped_lines
    lines, code = watch(command, env)
    wall = time.perf_counter() - started
    if code:
        sys.exit(f"{args.command} failed:\n" + "\n".join(line for _, line in lines[-30:]))
    longest = gaps(lines)
    result = {
        "benchmark": "make_run_silence", "measured_at": now_utc(), "machine": machine_info(),
        "load_average_before": load_before, "load_average_after": load_average(),
        "command": args.command, "terminal": watch is stamped_terminal_updates, "cold": args.cold,
        "wall_seconds": round(wall, 1), "lines": len(lines),
        "target_seconds": TARGET_SECONDS, "longest_gap_seconds": longest[0]["seconds"] if longest else None,
        "longest_gaps": longest,
    }
    write_result(result, out)
    print(f"{args.command}: {wall:.0f} s, {len(lines)} lines; longest silence {result['longest_gap_seconds']} s after "
          f"{longest[0]['after']!r} -> {out}")


if __name__ == "__main__":
    main()
