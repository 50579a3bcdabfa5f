"""Ingestion throughput: rows per second of `uniroute.ingest.ingest_file` beside DuckDB's own Parquet load.

Files: the shared mmlu_pro_cot29/long.parquet (347,215 rows) and a synthetic long Parquet file of 10M rows
(1M prompts x 10 models, written here with numpy/pyarrow). The baseline is DuckDB's
`create table t as select * from read_parquet(...)` into a fresh database file: the bare cost of getting the
rows into DuckDB, without validation, duplicate and conflict checks, or prompt de-duplication. The figure to
quote is the ratio of the two.

Exception to the house rule that only uniroute.store imports duckdb: the baseline IS plain DuckDB, so this
file imports it directly (and nothing else here touches DuckDB outside uniroute.store).

Run: `OMP_NUM_THREADS=1 .venv/bin/python -m benchmarks.speed.ingest [--rows 10000000] [--repeats 3]`;
results go to benchmarks/results/ingest.json.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import tempfile
import time
from pathlib import Path

import duckdb  # the comparison baseline (see the module docstring)
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks.runner import RESULTS_DIR, SHARED, load_average, machine_info, write_result
from benchmarks.scale import operations

RESULTS = RESULTS_DIR / "ingest.json"
WORDS = np.array([
    "route", "model", "prompt", "budget", "cluster", "answer", "question", "cost", "score", "quality",
    "token", "latency", "reason", "math", "code", "table", "graph", "proof", "chain", "sample",
])


def write_synthetic_long(path: Path, n_rows: int, n_models: int = 10, seed: int = 0) -> Path:
    """A long-format Parquet file of n_rows = n_prompts x n_models rows with ~90-character prompts."""
    rng = np.random.default_rng(seed)
    n_prompts = n_rows // n_models
    words = WORDS[rng.integers(0, len(WORDS), size=(n_prompts, 10))]  # (n_prompts, 10)
    texts = [f"synthetic prompt {i}: " + " ".join(row) for i, row in enumerate(words.tolist())]
    prompt_ids = [f"syn-{i:08d}" for i in range(n_prompts)]
    models = [f"synthetic-model-{j:02d}" for j in range(n_models)]
    skill = rng.uniform(0.3, 0.9, size=n_models)  # (n_models,)
    cost = rng.uniform(0.1, 10.0, size=n_models)  # (n_models,)
    writer = None
    chunk = max(1, 1_000_000 // n_models)
    try:
        for start in range(0, n_prompts, chunk):
            stop = min(start + chunk, n_prompts)
            p = np.repeat(np.arange(start, stop), n_models)  # (rows,) prompt index of each row
            m = np.tile(np.arange(n_models), stop - start)  # (rows,) model index of each row
            table = pa.table(
                {
                    "prompt_id": pa.array(prompt_ids[start:stop]).take(pa.array(p - start)),
                    "prompt": pa.array(texts[start:stop]).take(pa.array(p - start)),
                    "model": pa.array(models).take(pa.array(m)),
                    "score": (rng.random(len(p)) < skill[m]).astype(np.float64),
                    "cost": cost[m] * rng.uniform(0.5, 1.5, size=len(p)),
                    "benchmark": pa.array(["synthetic"] * len(p)),
                }
            )
            if writer is None:
                writer = pq.ParquetWriter(path, table.schema, compression="zstd")
            writer.write_table(table)
    finally:
        if writer is not None:
            writer.close()
    return path


def timed_ingest(path: Path, workdir: Path) -> tuple[float, float, int]:
    """Wall and CPU seconds (all threads) to ingest the file into a fresh store, and the results accepted."""
    db = workdir / "ingest.duckdb"
    db.unlink(missing_ok=True)
    started, cpu = time.perf_counter(), time.process_time()
    summary = operations.ingest(db, path, progress=False)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    db.unlink(missing_ok=True)
    return seconds, cpu, summary.rows_accepted


def timed_duckdb_ctas(path: Path, workdir: Path) -> tuple[float, float, int]:
    """Wall and CPU seconds for DuckDB to copy the Parquet file into a table of a fresh database file, and
    the rows."""
    db = workdir / "baseline.duckdb"
    db.unlink(missing_ok=True)
    started, cpu = time.perf_counter(), time.process_time()
    con = duckdb.connect(str(db))
    con.execute("create table t as select * from read_parquet($path)", {"path": str(path)})
    rows = con.execute("select count(*) from t").fetchone()[0]
    con.close()
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    db.unlink(missing_ok=True)
    return seconds, cpu, rows


def measured(name: str, path: Path, workdir: Path, repeats: int) -> dict:
    """Median timings of ingest and of the DuckDB baseline on one file (alternating, so that both see the
    same contention on this shared machine; CPU seconds are the less contention-sensitive figure)."""
    ingest_runs, baseline_runs, ingest_cpu, baseline_cpu, loads = [], [], [], [], []
    rows = baseline_rows = 0
    for _ in range(repeats):
        loads.append(load_average()[0])
        seconds, cpu, rows = timed_ingest(path, workdir)
        ingest_runs.append(seconds)
        ingest_cpu.append(cpu)
        seconds, cpu, baseline_rows = timed_duckdb_ctas(path, workdir)
        baseline_runs.append(seconds)
        baseline_cpu.append(cpu)
    ingest_s, baseline_s = statistics.median(ingest_runs), statistics.median(baseline_runs)
    result = {
        "file": name,
        "rows": baseline_rows,
        "rows_accepted": rows,
        "file_mb": round(path.stat().st_size / 2**20, 1),
        "repeats": repeats,
        "ingest_seconds": round(ingest_s, 2),
        "ingest_seconds_all": [round(s, 2) for s in ingest_runs],
        "ingest_rows_per_second": round(rows / ingest_s),
        "duckdb_ctas_seconds": round(baseline_s, 2),
        "duckdb_ctas_seconds_all": [round(s, 2) for s in baseline_runs],
        "duckdb_ctas_rows_per_second": round(baseline_rows / baseline_s),
        "ingest_over_ctas": round(ingest_s / baseline_s, 2),
        "ingest_cpu_seconds": round(statistics.median(ingest_cpu), 2),
        "duckdb_ctas_cpu_seconds": round(statistics.median(baseline_cpu), 2),
        "ingest_over_ctas_cpu": round(statistics.median(ingest_cpu) / statistics.median(baseline_cpu), 2),
        "load_average_1m_at_start": [round(load, 1) for load in loads],
    }
    print(json.dumps(result), flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000, help="rows of the synthetic file")
    parser.add_argument("--repeats", type=int, default=3, help="runs per file (the median is reported)")
    parser.add_argument("--synthetic-repeats", type=int, default=3, help="runs for the synthetic file")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    results = []
    with tempfile.TemporaryDirectory(prefix="uniroute-bench-") as tmp:
        workdir = Path(tmp)
        mmlu = SHARED / "mmlu_pro_cot29" / "long.parquet"
        if mmlu.exists():
            results.append(measured("mmlu_pro_cot29/long.parquet", mmlu, workdir, args.repeats))
        started = time.perf_counter()
        synthetic = write_synthetic_long(workdir / "synthetic.parquet", args.rows)
        generate_s = time.perf_counter() - started
        result = measured(f"synthetic {args.rows:,} rows", synthetic, workdir, args.synthetic_repeats)
        result["generate_seconds"] = round(generate_s, 1)
        results.append(result)
    write_result({
        "benchmark": "ingest",
        "machine": machine_info() | {"cpus": os.cpu_count(), "duckdb": duckdb.__version__},
        "threads": {k: os.environ.get(k) for k in ("OMP_NUM_THREADS",)},
        "results": results,
    }, args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
