"""`uniroute route` as a user runs it: one prompt end to end (cold and warm), and `route --file` of 10,000 prompts.

Set-up (not timed): a UNIROUTE_HOME under `--work` gets synthetic logs (`uniroute synth`, `--prompts` x
`--models`, seed `--seed`), `uniroute ingest`, `uniroute build` with `--embedder` (default static) and
`uniroute publish`. The built embedder model lives in `--work`/cache, kept across runs.

Measured, each `uniroute` call a fresh process (wall seconds, `time.perf_counter` around `subprocess.run`):
- **cold**: the first `uniroute route PROMPT` after the build (the stored embedder is restored to a file on
  this call; the OS file cache is whatever the build left, not dropped);
- **warm**: `--repeats` further calls, median and all runs; once answered by the store's champion (the store is
  free), once from the published snapshot (a writer holds the store: the route answers from
  `published/current`, what gateways see during a build);
- **imports**: `python -X importtime -m uniroute route PROMPT`: seconds of the top-level imports and which heavy
  packages (torch, mlflow, prefect, dask, distributed, sklearn, scipy) the routing path imported;
- **file**: `uniroute route --file` on `--file-prompts` new prompts (JSONL in, JSON lines out): wall seconds
  and prompts/s, beside the embedder's own encode rate on the same prompts in this process (its full rate).

Results: benchmarks/results/route_command.json. Timings are from a shared 2-core machine: the load average
before and after is recorded. Target: one prompt in under 1.5 s warm.

Run: `OMP_NUM_THREADS=1 .venv/bin/python -m benchmarks.speed.route_command [--repeats 7] [--file-prompts 10000]`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.runner import RESULTS_DIR, SINGLE_THREAD, load_average, machine_info, now_utc, write_result

RESULTS = RESULTS_DIR / "route_command.json"
PROMPT = "What is the derivative of x squared plus three x?"
HEAVY = ("torch", "mlflow", "prefect", "dask", "distributed", "sklearn", "scipy", "sentence_transformers")


def uniroute(env: dict[str, str], *args: str) -> tuple[float, str]:
    """Wall seconds of one `uniroute` process, and its stdout; raises with its stderr when it fails."""
    started = time.perf_counter()
    done = subprocess.run([str(Path(sys.executable).with_name("uniroute")), *args], env=env,
                          capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode:
        raise RuntimeError(f"uniroute {' '.join(args[:3])} failed ({done.returncode}): {done.stderr[-800:]}")
    return seconds, done.stdout


def built_home(work: Path, args: argparse.Namespace) -> dict[str, str]:
    """The environment of a fresh UNIROUTE_HOME with a built, published champion (its cache kept in work/cache)."""
    home = work / "home"
    if home.exists():
        shutil.rmtree(home)
    home.mkdir(parents=True)
    (work / "cache").mkdir(exist_ok=True)
    (home / "cache").symlink_to((work / "cache").resolve(), target_is_directory=True)
    env = {**os.environ, **SINGLE_THREAD, "UNIROUTE_HOME": str(home), "UNIROUTE_EMBEDDER": args.embedder,
           "UNIROUTE_SEED": str(args.seed)}
    data = work / "logs"
    uniroute(env, "synth", "--out", str(data), "--prompts", str(args.prompts), "--models", str(args.models),
             "--seed", str(args.seed), "--split")
    uniroute(env, "ingest", str(data / "logs.parquet"))
    uniroute(env, "build")
    uniroute(env, "publish")
    return env


def prompts_file(work: Path, n: int, seed: int) -> tuple[Path, list[str]]:
    """A JSONL file of n synthetic prompts the store has not seen (another seed than the store's logs)."""
    import pyarrow.parquet as pq

    from uniroute.synth import write_synthetic_logs

    logs = write_synthetic_logs(work / "file_logs", n_prompts=n, n_models=2, n_topics=8, seed=seed + 1)
    texts = pq.read_table(logs.logs_path, columns=["prompt_id", "prompt"]).to_pandas().drop_duplicates("prompt_id")
    prompts = texts["prompt"].tolist()[:n]
    path = work / "prompts.jsonl"
    path.write_text("".join(json.dumps({"id": i, "prompt": p}) + "\n" for i, p in enumerate(prompts)))
    return path, prompts


def import_profile(env: dict[str, str]) -> dict[str, Any]:
    """Top-level import seconds of one `route` process and the heavy packages it imported."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "uniroute", "route", PROMPT], env=env,
                          capture_output=True, text=True, check=True)
    total_us, imported = 0, set()
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        _, cumulative, name = line.split("|", 2)
        if not cumulative.strip().isdigit():
            continue
        if not name.startswith("  "):  # a top-level import: its cumulative time counts once
            total_us += int(cumulative)
        imported.add(name.strip().split(".")[0])
    return {"import_seconds_top_level": round(total_us / 1e6, 3),
            "heavy_packages_imported": sorted(set(HEAVY) & imported)}


def timed_routes(env: dict[str, str], repeats: int) -> list[float]:
    return [round(uniroute(env, "route", PROMPT, "--json")[0], 3) for _ in range(repeats)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--embedder", default="static")
    parser.add_argument("--prompts", type=int, default=2000, help="prompts in the store's synthetic logs")
    parser.add_argument("--models", type=int, default=8)
    parser.add_argument("--file-prompts", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=7, help="warm calls per variant (the median is reported)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", type=Path, default=Path("/tmp/uniroute-bench-route"),
                        help="scratch folder (never the repository)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    load_before = load_average()
    args.work.mkdir(parents=True, exist_ok=True)
    env = built_home(args.work, args)
    home = Path(env["UNIROUTE_HOME"])

    cold = round(uniroute(env, "route", PROMPT, "--json")[0], 3)
    warm_store = timed_routes(env, args.repeats)
    # A writer holds the store (as a build does): route answers from the published snapshot.
    from uniroute import store

    with store.session(home / "uniroute.duckdb", "benchmark-hold"):
        warm_snapshot = timed_routes(env, args.repeats)
    imports = import_profile(env)

    path, prompts = prompts_file(args.work, args.file_prompts, args.seed)
    file_runs = []
    for _ in range(max(1, args.repeats // 3)):
        seconds, out = uniroute(env, "route", "--file", str(path))
        if len(out.splitlines()) != len(prompts):
            raise RuntimeError(f"route --file answered {len(out.splitlines())} lines for {len(prompts)} prompts")
        file_runs.append(round(seconds, 3))
    from uniroute.embed import make_embedder
    from uniroute.settings import apply_offline_environment

    apply_offline_environment()
    embedder = make_embedder(args.embedder, progress=False, cache_dir=home / "cache", fit_texts=prompts)
    embedder.encode(prompts[:100])  # table and tokenizer loaded
    started = time.perf_counter()
    embedder.encode(prompts)
    encode_seconds = time.perf_counter() - started
    file_median = statistics.median(file_runs)

    result = {
        "benchmark": "route_command",
        "date": now_utc(),
        "config": {"embedder": args.embedder, "store_prompts": args.prompts, "models": args.models,
                   "file_prompts": len(prompts), "repeats": args.repeats, "seed": args.seed, "prompt": PROMPT},
        "machine": machine_info() | {"load_average_before": load_before, "load_average_after": load_average()},
        "one_prompt": {
            "cold_seconds": cold,
            "warm_from_store": {"median_seconds": statistics.median(warm_store), "runs": warm_store},
            "warm_from_snapshot": {"median_seconds": statistics.median(warm_snapshot), "runs": warm_snapshot},
            "target_seconds": 1.5,
            **imports,
        },
        "file": {
            "command": "uniroute route --file prompts.jsonl",
            "median_seconds": file_median, "runs": file_runs,
            "prompts_per_second": round(len(prompts) / file_median),
            "embedder_encode_seconds_in_process": round(encode_seconds, 3),
            "embedder_prompts_per_second_in_process": round(len(prompts) / encode_seconds),
        },
    }
    write_result(result, args.out)
    print(json.dumps(result["one_prompt"]), json.dumps(result["file"]), f"wrote {args.out}", sep="\n")


if __name__ == "__main__":
    main()
