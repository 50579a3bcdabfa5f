"""Peak memory of `uniroute ingest` on a large junk log: it should follow a block, not the file.

A file of about --mb MB (default 200) is generated: random prompt text, a few models, every fifth score and cost
not a number (junk the checks quarantine), as a long-format CSV (--format csv), JSON lines (jsonl), a RouterBench
wide CSV with a response column per model (wide), a RouterDC JSON list (routerdc) or a pairwise CSV (pairwise); or
outcomes as JSON lines (outcomes: decision_id, score, cost, tokens; --rows sets the count, for decisions not stored,
so each waits in pending_outcomes).
`uniroute ingest` runs in a child process into a fresh home; its peak RSS (ru_maxrss of the child) is recorded
against the file size. Each run is kept in benchmarks/results/ingest_memory.json under its format and size, so
runs at several sizes show whether the peak grows with the file.

    python -m benchmarks.speed.ingest_memory [--mb 200] [--format csv|jsonl|wide|routerdc|pairwise|outcomes]
    python -m benchmarks.speed.ingest_memory --format outcomes --rows 1000000 [--whole]
"""

from __future__ import annotations

import argparse
import csv
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
# About one generated row's bytes.
ROW_BYTES = {"csv": 130, "jsonl": 190, "wide": 790, "routerdc": 345, "pairwise": 132, "outcomes": 115}
WORDS = np.array(["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda",
                  "mu", "nu", "xi", "omicron", "pi", "rho", "sigma", "tau", "upsilon"])
MODELS = [f"junk-llm-{i}" for i in range(5)]


def write_junk_csv(path: Path, mb: float, seed: int = 0, fmt: str = "csv") -> int:
    """A long CSV (or JSON-lines file) of about mb MB; the number of data rows."""
    if fmt in WRITERS:
        return WRITERS[fmt](path, int(mb * 1e6 / ROW_BYTES[fmt]), np.random.default_rng(seed))
    rng = np.random.default_rng(seed)
    words = WORDS
    n = int(mb * 1e6 / ROW_BYTES[fmt])
    models = MODELS
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


def _junk_numbers(rng: np.random.Generator, m: int, scale: float = 1.0) -> np.ndarray:
    """m numbers as text, a fifth of them junk."""
    values = (rng.random(m) * scale).round(4).astype(str)
    values[rng.random(m) < 0.2] = "n/a"
    return values


def _write_wide(path: Path, n: int, rng: np.random.Generator) -> int:
    """A RouterBench wide CSV: one row per prompt, a score, a response and a cost column per model; every
    thousandth sample_id given as two rows (a prompt split over rows, merged)."""
    header = ["", "sample_id", "prompt", "eval_name", *MODELS, *(f"{m}|model_response" for m in MODELS),
              *(f"{m}|total_cost" for m in MODELS), "oracle_model_to_route_to"]
    with open(path, "w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(header)
        for start in range(0, n, 20_000):
            m = min(20_000, n - start)
            scores = [_junk_numbers(rng, m).tolist() for _ in MODELS]
            costs = [_junk_numbers(rng, m, 0.01).tolist() for _ in MODELS]
            for i in range(m):
                row = start + i
                prompt = repr([" ".join(rng.choice(WORDS, 40))])
                responses = [" ".join(rng.choice(WORDS, 18)) for _ in MODELS]
                writer.writerow([row, f"junk.{row - (row % 1000 == 1)}", prompt, "junk", *(s[i] for s in scores),
                                 *responses, *(c[i] for c in costs), MODELS[0]])
    return n


def _write_routerdc(path: Path, n: int, rng: np.random.Generator) -> int:
    """A RouterDC JSON list of {"question", "scores": {model: score}} (scores k/4, a fifth of them junk)."""
    with open(path, "w", encoding="utf-8") as out:
        out.write("[\n")
        for start in range(0, n, 20_000):
            m = min(20_000, n - start)
            scores = [(rng.integers(0, 5, m) / 4).tolist() for _ in MODELS]
            junk = rng.random((len(MODELS), m)) < 0.2
            for i in range(m):
                entry = {"question": f"q{start + i} " + " ".join(rng.choice(WORDS, 40)),
                         "scores": {model: ("n/a" if junk[j, i] else scores[j][i]) for j, model in enumerate(MODELS)}}
                out.write(("" if start + i == 0 else ",\n") + json.dumps(entry))
        out.write("\n]\n")
    return n


def _write_pairwise(path: Path, n: int, rng: np.random.Generator) -> int:
    """A pairwise CSV in the arena convention (a fifth of the winners junk)."""
    winners = np.array(["model_a", "model_b", "tie", "tie (bothbad)", "nobody"])
    with open(path, "w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(["question_id", "prompt", "model_a", "model_b", "winner"])
        for start in range(0, n, 100_000):
            m = min(100_000, n - start)
            a, b = rng.integers(0, len(MODELS), m), rng.integers(0, len(MODELS) - 1, m)
            b = b + (b >= a)
            won = winners[np.where(rng.random(m) < 0.2, 4, rng.integers(0, 4, m))]
            # three battles a prompt (one text per prompt id; start is a multiple of three)
            texts = [" ".join(rng.choice(WORDS, 18)) for _ in range((m + 2) // 3)]
            writer.writerows([f"p{(start + i) // 3}", texts[i // 3], MODELS[a[i]], MODELS[b[i]], won[i]]
                             for i in range(m))
    return n


def _write_outcomes(path: Path, n: int, rng: np.random.Generator) -> int:
    """Outcomes as JSON lines: a 32-hex decision_id, a 0/1 score, a cost and token counts per row."""
    with open(path, "w", encoding="utf-8") as out:
        for start in range(0, n, 100_000):
            m = min(100_000, n - start)
            ids = [f"{start + i:08d}" + rng.bytes(12).hex() for i in range(m)]
            scores, costs = rng.integers(0, 2, m), (rng.random(m) / 100).round(6)
            tokens = rng.integers(1, 2000, (m, 2))
            out.writelines(f'{{"decision_id": "{ids[i]}", "score": {scores[i]}, "cost": {costs[i]}, '
                           f'"input_tokens": {tokens[i, 0]}, "output_tokens": {tokens[i, 1]}}}\n' for i in range(m))
    return n


# The same CLI with every reader's batch above any file: read whole, as before blocks (or outcome batches) existed.
WHOLE = ("import sys; import uniroute.ingest.blocks as b; b.BATCH_BYTES = 1 << 62; "
         "import uniroute.ingest.outcomes as o; o.BATCH_ROWS = 1 << 62; "
         "sys.argv = ['uniroute', *sys.argv[1:]]; from uniroute.cli import app; app()")
WRITERS = {"wide": _write_wide, "routerdc": _write_routerdc, "pairwise": _write_pairwise, "outcomes": _write_outcomes}
SUFFIX = {"csv": "csv", "jsonl": "jsonl", "wide": "csv", "routerdc": "json", "pairwise": "csv", "outcomes": "jsonl"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=200.0)
    parser.add_argument("--format", choices=sorted(ROW_BYTES), default="csv")
    parser.add_argument("--rows", type=int, default=None, help="the number of rows instead of --mb")
    parser.add_argument("--whole", action="store_true",
                        help="read the file whole, as before it was read in blocks (the comparison point)")
    args = parser.parse_args()
    if args.rows is not None:
        args.mb = args.rows * ROW_BYTES[args.format] / 1e6
    with tempfile.TemporaryDirectory(prefix="uniroute-ingest-memory-") as tmp:
        csv_path = Path(tmp) / f"junk.{SUFFIX[args.format]}"
        rows = write_junk_csv(csv_path, args.mb, fmt=args.format)
        file_mb = csv_path.stat().st_size / 1e6
        load_before = load_average()
        env = {**os.environ, "UNIROUTE_HOME": str(Path(tmp) / "home"), "UNIROUTE_MLFLOW": "false"}
        started = time.perf_counter()
        command = ["-m", "uniroute", "ingest", str(csv_path)]
        if args.whole:  # the same CLI with the block threshold above any file: every file is read whole
            command = ["-c", WHOLE, "ingest", str(csv_path)]
        done = subprocess.run([sys.executable, *command], env=env,
                              capture_output=True, text=True)
        seconds = time.perf_counter() - started
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # kB on Linux
    result = {
        "benchmark": "ingest_memory",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "duckdb": duckdb.__version__},
        "command": "python -m benchmarks.speed.ingest_memory " + (f"--rows {args.rows}" if args.rows is not None
                                                                   else f"--mb {args.mb:g}")
                   + f" --format {args.format}" + (" --whole" if args.whole else ""),
        "format": args.format,
        "whole": args.whole,
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
    size = f"{args.rows}rows" if args.rows is not None else f"{args.mb:g}mb"
    runs[f"{args.format}-{size}" + ("-whole" if args.whole else "")] = result
    kept = {"benchmark": "ingest_memory", **{k: v for k, v in kept.items() if k not in ("runs", "benchmark")},
            "runs": dict(sorted(runs.items()))}
    RESULTS.write_text(json.dumps(kept, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
