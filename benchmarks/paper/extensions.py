"""The paper's further experiments on the shared datasets, run one after the other.

`run` executes every experiment of `experiments` in turn (20 trials, seed 0, the `static` embedder, the default,
which matched MiniLM's routing Area within noise at a fraction of its CPU; one at a time, since they are CPU-heavy),
writing JSON and PNG files into docs/results/ and its intermediate files (arena-style battles,
rule-made attribute labels) under $UNIROUTE_HOME/paper_extensions/, and records wall times and the machine's
load in docs/results/paper_extensions_runs.json. The page that reports them, docs/results/paper_extensions.md, is
written from those files by tools/pages/paper_extensions.py: nothing in it is typed by hand.

Run: `UNIROUTE_HOME=.uniroute OMP_NUM_THREADS=1 .venv/bin/python -m benchmarks.paper.extensions run [--only NAME]`
then `.venv/bin/python -m tools.pages.paper_extensions`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.paper.experiments import EXPERIMENTS, RESULTS, shown
from benchmarks.runner import REPO, load_average, write_result

RUNS = REPO / RESULTS / "paper_extensions_runs.json"


def run(only: list[str] | None) -> None:
    """Run the experiments one after another; record wall time and load average of each."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
           "MKL_NUM_THREADS": "1"}
    home = Path(env.setdefault("UNIROUTE_HOME", str(REPO / ".uniroute"))).resolve()
    (home / "paper_extensions").mkdir(parents=True, exist_ok=True)
    runs = json.loads(RUNS.read_text()) if RUNS.exists() else {}
    for name, argv in EXPERIMENTS.items():
        if only and name not in only:
            continue
        args = [a.replace("$UNIROUTE_HOME", str(home)) for a in argv]
        command = ([sys.executable, "-m", args[0].split(":", 1)[1], *args[1:]] if args[0].startswith("python:")
                   else [str(REPO / ".venv" / "bin" / "uniroute"), *args])
        print(f"== {name}: {shown(argv)}", flush=True)
        load_before, started = load_average(), time.perf_counter()
        code = subprocess.call(command, cwd=REPO, env=env)
        runs[name] = {"command": shown(argv), "exit": code, "seconds": round(time.perf_counter() - started, 1),
                      "load_average_before": load_before,
                      "load_average_after": load_average(), "cpu_count": os.cpu_count(),
                      "finished": time.strftime("%Y-%m-%d %H:%M:%S")}
        write_result(runs, RUNS, indent=1)
        print(f"== {name}: exit {code} after {runs[name]['seconds']:.0f} s", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", nargs="?", default="run", choices=("run",))
    parser.add_argument("--only", nargs="*", help="run only these experiments")
    args = parser.parse_args()
    run(args.only)


if __name__ == "__main__":
    main()
