"""Peak memory of `uniroute ingest` on a large junk log: it should follow a block, not the file (issue 22).

A long-format CSV (or, with --format jsonl, JSON lines) of about --mb MB (default 200) is generated: random prompt
text, a few models, every fifth score and cost not a number (junk the checks quarantine). `uniroute ingest` runs
in a child process into a fresh home; its peak RSS (ru_maxrss of the child) is recorded against the file size.
Each run is kept in benchmarks/results/ingest_memory.json under its format and size, so runs at several sizes
show whether the peak grows with the file.

    python -m benchmarks.speed.ingest_memory [--mb 200] [--format csv|jsonl]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import numpy as np

from benchmarks.runner import load_average

RESULTS = Path(__file__).resolve().parents[1] / "results" / "ingest_memory.json"
ROW_BYTES = {"csv": 130, "jsonl": 190}  # about what one generated row takes


def write_junk_csv(path: Path, mb: float, seed: int = 0, fmt: str = "csv") -> int:
    """A long CSV (or JSON-lines file) of about mb MB; the number of data rows."""
    rng = np.random.default_rng(seed)
    words = np.array(["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa",
                      "lambda", "mu", "nu", "xi", "omicron", "pi", "rho", "sigma", "tau", "upsilon"])
    n = int(mb * 1e6 / ROW_BYTES[fmt])
    models = [f"junk-llm-{i}" for i in range(5)]
    written = 0
    with open(path, "w", encoding="utf-8") as out:
        if fmt == "csv":
            out.write("prompt_id,prompt,model,score,cost\n")
        for start in range(0, n, 100_000):
            m = min(100_000, n - start)
            prompts = [" ".join(rng.choice(words, 18)) for _ in range(m)]
            scores = rng.random(m).round(3).astype(str)
            costs = (rng.random(m) / 100).round(6).astype(str)
            junk = rng.random(m) < 0.2
            scores[junk], costs[junk] = "n/a", "free"
            if fmt == "csv":
                out.writelines(f"p{(start + i) // 5},\"{prompts[i]}\",{models[(start + i) % 5]},{scores[i]},"
                               f"{costs[i]}\n" for i in range(m))
            else:
                out.writelines(json.dumps({"prompt_id": f"p{(start + i) // 5}", "prompt": prompts[i],
                                           "model": models[(start + i) % 5], "score": scores[i], "cost": costs[i]})
                               + "\n" for i in range(m))
            written += m
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=200.0)
    parser.add_argument("--format", choices=sorted(ROW_BYTES), default="csv")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="uniroute-ingest-memory-") as tmp:
        csv_path = Path(tmp) / f"junk.{args.format}"
        rows = write_junk_csv(csv_path, args.mb, fmt=args.format)
        file_mb = csv_path.stat().st_size / 1e6
        load_before = load_average()
        env = {**os.environ, "UNIROUTE_HOME": str(Path(tmp) / "home"), "UNIROUTE_MLFLOW": "false"}
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "uniroute", "ingest", str(csv_path)], env=env,
                              capture_output=True, text=True)
        seconds = time.perf_counter() - started
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # kB on Linux
    result = {
        "benchmark": "ingest_memory",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "duckdb": duckdb.__version__},
        "command": "python -m benchmarks.speed.ingest_memory --mb " + f"{args.mb:g} --format {args.format}",
        "format": args.format,
        "file_mb": round(file_mb, 1),
        "rows": rows,
        "exit_code": done.returncode,
        "output": (done.stdout + done.stderr).strip().splitlines()[-3:],
        "seconds": round(seconds, 1),
        "load_average_before": load_before,
        "load_average_after": load_average(),
        "peak_rss_mb": round(peak_mb, 1),
        "peak_over_file": round(peak_mb / file_mb, 2),
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    kept = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    runs = kept.get("runs", {})
    runs[f"{args.format}-{args.mb:g}mb"] = result
    kept = {"benchmark": "ingest_memory", **{k: v for k, v in kept.items() if k not in ("runs", "benchmark")},
            "runs": dict(sorted(runs.items()))}
    RESULTS.write_text(json.dumps(kept, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
