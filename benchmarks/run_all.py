"""`make bench`: run every benchmark in turn; each writes its JSON to benchmarks/results/.

Timings are noisy on this shared 2-core machine: each benchmark repeats its measurements and reports medians.
Run one with `.venv/bin/python -m benchmarks.<name> --help` for its options.
"""

from __future__ import annotations

import subprocess
import sys
import time

BENCHMARKS = ("routing", "route_command", "ingest", "embedding", "evaluate", "pipeline")


def main() -> int:
    failed = []
    for name in BENCHMARKS:
        started = time.perf_counter()
        print(f"== benchmarks.{name}", flush=True)
        code = subprocess.call([sys.executable, "-m", f"benchmarks.{name}"])
        print(f"== benchmarks.{name}: exit {code} after {time.perf_counter() - started:.0f} s", flush=True)
        if code:
            failed.append(name)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
