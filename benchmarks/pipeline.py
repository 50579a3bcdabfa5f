"""End-to-end pipeline timings: build, onboarding latency, publish, and a build at 1M prompts x 100 models.

Sections (each runs in its own child process, so its peak RSS is its own):

`mmlu` -- on `../shared/datasets/mmlu_pro_cot29/long.parquet` (12,032 prompts x 29 LLMs; the two Gemini
models have no cost and the build leaves them out):
  1. ingest the file into a fresh store, then `uniroute.build.run_build` with MiniLM and MLflow on, once on
     a cold embedding cache (12,032 prompts embedded) and `--warm-repeats` times on the warm cache (the same
     store). Per-stage seconds are BuildResult.seconds. MiniLM's weights are loaded (and timed) before the
     cold build, so neither build includes that one-off per-process load.
  2. onboarding latency: a second store gets the logs without one model (default: the costed model with the
     best mean score, `make run`'s rule among costed models), its embedding cache is seeded with the
     first store's vectors (same texts, same embedder id: no re-embedding) and it is built. 1,000 of the
     held-back model's results on prompts whose stored split is 'val' are written to a Parquet file. Each
     repeat copies the built home folder, drops the file into the copy's inbox and times from
     `process_inbox` (the file landing) to `onboard_models` returning the child router that contains the
     model, with the MLflow run and without it (tracking_uri None). The validation prompts are already in
     the store and clustered, so onboarding embeds nothing (the common case: a new LLM answers the existing
     validation set). A fresh-process variant times `uniroute onboard --results FILE` as a subprocess.
  3. publish: `publish_champion(..., force=True)` on the onboarded copy, with and without MLflow.

`startup` -- import seconds of a fresh process (uniroute.cli; ingest and onboard; mlflow): what the CLI
variant of onboarding pays on top of the in-process latency.

`synthetic` -- `uniroute.synth.write_synthetic_logs` writes `--prompts` x `--models` long Parquet logs; they
are ingested as `--ingest-parts` files (row groups are whole prompts), then `run_build` runs with the TF-IDF
embedder (MiniLM at ~100 prompts/s on this CPU would take hours on 1M prompts) and MLflow on. Above
build.DASK_KMEANS_MIN_PROMPTS training prompts K-means runs on Dask and K is tuned on build.TUNING_SAMPLE
prompts. Peak RSS (ru_maxrss of the process and of its children) is recorded after every step; a watchdog
ends the section with a traceback if the RSS passes `--max-rss-gb` (the machine is shared).

Timings are wall seconds on a shared, contended 2-core machine: repeated figures are medians, the load
average at the start and end of each section is recorded. Results: benchmarks/results/pipeline.json (a
section that is not run keeps its previous figures there).

Run: `OMP_NUM_THREADS=1 .venv/bin/python -m benchmarks.pipeline [--skip-mmlu] [--skip-1m]
[--prompts 1000000 --models 100] [--warm-repeats 3] [--onboard-repeats 3] [--publish-repeats 3]`.
"""

from __future__ import annotations

import argparse
import cProfile
import faulthandler
import json
import logging
import os
import platform
import pstats
import resource
import shutil
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

import numpy as np

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results" / "pipeline.json"
MMLU = REPO.parent / "shared" / "datasets" / "mmlu_pro_cot29" / "long.parquet"
SINGLE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
SECTIONS = ("mmlu", "synthetic", "startup")
ONBOARD_TARGET_SECONDS = 5.0

log = logging.getLogger("benchmarks.pipeline")


# ------------------------------------------------------------------------------------------- measuring


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
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=2, default=str) + "\n")
        tmp.replace(self.path)


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


# ------------------------------------------------------------------------------------------ helpers


def fresh_home(path: Path):
    """Settings for an empty UNIROUTE_HOME at path (removed first if it exists)."""
    from uniroute.settings import Settings

    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return Settings(home=path)


def build_figures(result, wall: float) -> dict[str, Any]:
    """What a BuildResult says about speed and outcome."""
    return {
        "seconds": rounded(result.seconds),
        "seconds_total": round(wall, 3),
        "k": result.k,
        "k_learned_map": result.k_learned_map,
        "models": len(result.models),
        "excluded_models": list(result.excluded_models),
        "n_prompts": result.n_prompts,
        "promoted": result.promoted,
        "test_area": {m: round(v["area"], 4) for m, v in result.metrics.items()},
        "mlflow_run": result.mlflow_run_id is not None,
    }


def timed_build(settings, embedder: str, seed: int, mlflow: bool = True) -> dict[str, Any]:
    from uniroute.build import run_build

    t0 = time.perf_counter()
    result = run_build(
        settings.db_path, embedder, seed,
        tracking_uri=settings.mlflow_uri if mlflow else None,
        artifact_root=settings.mlflow_artifacts if mlflow else None,
    )
    figures = build_figures(result, time.perf_counter() - t0)
    figures["load_average_after"] = load_average()
    log.info("build: %s", json.dumps(figures))
    return figures


def stage_summary(builds: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Median seconds per stage (and total) over several builds."""
    stages = builds[0]["seconds"].keys()
    out = {stage: median([b["seconds"][stage] for b in builds]) for stage in stages}
    out["total"] = median([b["seconds_total"] for b in builds])
    return out


def held_back_model(logs) -> str:
    """The model with the best mean score among those with a cost: `make run`'s rule (deployments/demo.py), limited
    to costed models because a model without a cost is left out of the build and could not be onboarded."""
    import pyarrow.compute as pc

    costed = logs.filter(pc.is_valid(logs["cost"]))
    means = costed.group_by("model").aggregate([("score", "mean")]).to_pandas()
    return str(means.sort_values(["score_mean", "model"], ascending=[False, True]).iloc[0]["model"])


@dataclass(frozen=True)
class ReplayEmbedder:
    """Hands out vectors already computed for the same embedder id (seeds a second store's cache)."""

    embedder_id: str
    dim: int
    vectors: dict[str, np.ndarray]
    progress: bool = False

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self.vectors[t] for t in texts]).astype(np.float32)


def seed_embedding_cache(source_db: Path, target_db: Path, texts: list[str], embedder) -> int:
    """Copy the source store's cached vectors of `texts` into the target store; how many were copied."""
    from uniroute import embed

    vectors = embed.embed_cached(source_db, texts, embedder)  # all cached: a lookup, nothing embedded
    replay = ReplayEmbedder(embedder.embedder_id, embedder.dim, dict(zip(texts, vectors, strict=True)))
    embed.embed_cached(target_db, texts, replay)
    return len(texts)


def val_prompt_ids(db_path: Path) -> list[str]:
    """Ids of the prompts whose fixed split is 'val', in id order."""
    from uniroute import store

    sql = "select prompt_id from prompt_splits where split = 'val' order by prompt_id"
    return store.read_only_query(db_path, sql)["prompt_id"].tolist()


# ------------------------------------------------------------------------------------------- mmlu


def restore_home(template: Path, home: Path) -> None:
    """A pristine copy of the built home at `home` (whatever was there is removed)."""
    if home.exists():
        shutil.rmtree(home)
    shutil.copytree(template, home, symlinks=True)


def onboard_once(
    template: Path, home: Path, artifact_root: Path, results_file: Path, model: str, mlflow: bool
) -> dict[str, Any]:
    """Land the results file in a fresh copy of the built home; seconds until the model is routable.

    Each copy lives at a new path: MLflow caches one database engine per tracking URI in the process, so a
    file replaced under the same URI would be written through a stale engine. The MLflow experiment records
    the template's artifact folder and refuses another, so runs of every copy put their artifacts there.
    """
    from uniroute import registry
    from uniroute.ingest import process_inbox
    from uniroute.onboard import onboard_models
    from uniroute.settings import Settings

    restore_home(template, home)
    settings = Settings(home=home)
    settings.inbox_dir.mkdir(parents=True, exist_ok=True)
    shutil.copy(results_file, settings.inbox_dir / results_file.name)
    t0 = time.perf_counter()
    outcomes = process_inbox(settings.db_path, settings.inbox_dir)
    t_ingest = time.perf_counter()
    landed = [m for o in outcomes if o.summary is not None for m in o.summary.landed_models]
    result = onboard_models(
        settings.db_path, landed,
        tracking_uri=settings.mlflow_uri if mlflow else None,
        artifact_root=artifact_root if mlflow else None,
    )
    t_end = time.perf_counter()
    routable = model in registry.load_champion(settings.db_path).router.models
    if not routable or landed != [model]:
        raise RuntimeError(f"onboarding landed {landed} and the champion routes {model}: {routable}")
    return {
        "seconds": round(t_end - t0, 3),
        "ingest_seconds": round(t_ingest - t0, 3),
        "onboard_seconds": round(t_end - t_ingest, 3),
        "embedded_prompts": result.embedded_prompts,
        "mlflow_run": result.mlflow_run_id is not None,
    }


def onboard_cli_once(template: Path, home: Path, results_file: Path) -> dict[str, Any]:
    """`uniroute onboard --results FILE --json` in a new process on a fresh copy: wall seconds incl. start-up.

    The copy is put back at the template's own path (its MLflow store only accepts its own artifact folder).
    """
    restore_home(template, home)
    env = {**os.environ, "UNIROUTE_HOME": str(home)}
    t0 = time.perf_counter()
    done = subprocess.run(
        [str(Path(sys.executable).with_name("uniroute")), "onboard", "--results", str(results_file), "--json"],
        env=env, capture_output=True, text=True,
    )
    wall = time.perf_counter() - t0
    if done.returncode:
        raise RuntimeError(f"uniroute onboard failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    reported = json.loads(done.stdout.strip().splitlines()[-1])
    return {"seconds": round(wall, 3), "onboard_seconds_reported": round(reported["seconds"], 3)}


def mmlu_logs(limit: int, work: Path):
    """The mmlu_pro_cot29 logs (the first `limit` prompt ids only when limit > 0, for a smoke run) and their file."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    logs = pq.read_table(MMLU)
    if not limit:
        return logs, MMLU
    keep = pa.array(sorted(set(logs.column("prompt_id").to_pylist()))[:limit])
    logs = logs.filter(pc.is_in(logs["prompt_id"], value_set=keep))
    path = work / f"logs_first_{limit}.parquet"
    pq.write_table(logs, path)
    return logs, path


def run_mmlu(args: argparse.Namespace, out: Partial) -> None:
    """Build (cold and warm cache), onboarding latency and publish time on mmlu_pro_cot29."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    import torch

    from uniroute import embed
    from uniroute.ingest import ingest_file
    from uniroute.publish import publish_champion

    torch.set_num_threads(1)
    work = args.work / "mmlu"
    data = out.data
    data["dataset"] = str(MMLU)
    data["prompt_limit"] = args.mmlu_limit or None

    t0 = time.perf_counter()
    minilm = embed.load_minilm(progress=False)
    data["minilm_load_seconds_first_in_process"] = round(time.perf_counter() - t0, 3)
    out.save()

    # 1. Build on the full logs: cold cache once, then warm.
    full = fresh_home(work / "full")
    logs, logs_path = mmlu_logs(args.mmlu_limit, work)
    summary = ingest_file(full.db_path, logs_path, progress=False)
    data["ingest"] = {"seconds": summary.seconds, "rows_accepted": summary.rows_accepted,
                      "new_prompts": summary.new_prompts, "new_models": summary.new_models}
    out.save()
    log.info("cold build (embeds every prompt with MiniLM)")
    data["build_cold"] = timed_build(full, "minilm", args.seed)
    out.save()
    warm = []
    for i in range(args.warm_repeats):
        log.info("warm build %d/%d", i + 1, args.warm_repeats)
        warm.append(timed_build(full, "minilm", args.seed))
        data["build_warm"] = {"runs": warm, "median_seconds": stage_summary(warm)}
        out.save()

    # 2. A store without one model, built, then that model's validation results land.
    model = args.holdout or held_back_model(logs)
    held = fresh_home(work / "held_out")
    without = work / "logs_without_model.parquet"
    pq.write_table(logs.filter(pc.not_equal(logs["model"], model)), without)
    ingest_file(held.db_path, without, progress=False)
    texts = logs.column("prompt").unique().to_pylist()
    seeded = seed_embedding_cache(full.db_path, held.db_path, texts, minilm)
    held_build = timed_build(held, "minilm", args.seed)
    template = work / "held_out_template"
    restore_home(held.home, template)
    data["onboarding"] = {"held_back_model": model, "seeded_cached_vectors": seeded, "build": held_build}
    out.save()

    val = set(val_prompt_ids(held.db_path))
    mine = logs.filter(pc.equal(logs["model"], model)).to_pandas()
    mine = mine[mine["prompt_id"].isin(val)].sort_values("prompt_id")
    n = min(args.onboard_results, len(mine))
    chosen = mine.sample(n=n, random_state=args.seed).sort_values("prompt_id")
    results_file = work / f"val_results_{n}.parquet"
    chosen.to_parquet(results_file, index=False)
    onboarding = data["onboarding"]
    onboarding.update({"val_prompts_in_store": len(val), "val_results_of_model": len(mine), "results_landed": n})
    copies = []
    for variant, mlflow in (("with_mlflow", True), ("without_mlflow", False)):
        runs = []
        for i in range(args.onboard_repeats):
            copies.append(work / f"onboard_{variant}_{i}")
            runs.append(onboard_once(template, copies[-1], held.mlflow_artifacts, results_file, model, mlflow))
            if len(copies) > 1:
                shutil.rmtree(copies[-2])
            log.info("onboarding %s %d: %s", variant, i + 1, runs[-1])
        onboarding[variant] = {
            "runs": runs,
            "median_seconds": median([r["seconds"] for r in runs]),
            "median_ingest_seconds": median([r["ingest_seconds"] for r in runs]),
            "median_onboard_seconds": median([r["onboard_seconds"] for r in runs]),
            "under_target": median([r["seconds"] for r in runs]) < ONBOARD_TARGET_SECONDS,
        }
        out.save()
    # 3. Publish the champion of the last onboarding (the held-back model is in its pool).
    from uniroute.settings import Settings

    onboarded = Settings(home=copies[-1])
    publish: dict[str, Any] = {}
    for variant, mlflow in (("with_mlflow", True), ("without_mlflow", False)):
        seconds = []
        for _ in range(args.publish_repeats):
            t0 = time.perf_counter()
            result = publish_champion(
                onboarded.db_path, onboarded.published_dir,
                onboarded.mlflow_uri if mlflow else None, held.mlflow_artifacts if mlflow else None,
                force=True,
            )
            seconds.append(round(time.perf_counter() - t0, 3))
            if not result.published:
                raise RuntimeError(f"publish with force=True did not publish: {result.reason}")
        publish[variant] = {"runs": seconds, "median_seconds": median(seconds)}
        publish.update(pool_size=len(result.pool), pool_has_held_back_model=model in result.pool)
        out.save()
    data["publish"] = publish
    out.save()

    # Last: the CLI in fresh processes, on copies put back at the built home's own path.
    runs = [onboard_cli_once(template, held.home, results_file) for _ in range(args.onboard_repeats)]
    onboarding["cli_fresh_process_with_mlflow"] = {
        "command": "uniroute onboard --results FILE --json",
        "runs": runs,
        "median_seconds": median([r["seconds"] for r in runs]),
    }
    onboarding["target_seconds"] = ONBOARD_TARGET_SECONDS
    out.save()


# -------------------------------------------------------------------------------------- synthetic


def ingest_in_parts(logs_path: Path, parts: int, db_path: Path, work: Path) -> list[dict[str, Any]]:
    """Write the logs as `parts` Parquet files of whole row groups (whole prompts) and ingest each in turn."""
    import pyarrow.parquet as pq

    from uniroute.ingest import ingest_file

    source = pq.ParquetFile(logs_path)
    groups = np.array_split(np.arange(source.num_row_groups), parts)
    out = []
    for i, group in enumerate(groups):
        if len(group) == 0:
            continue
        part = work / f"logs_part{i:02d}.parquet"
        with pq.ParquetWriter(part, source.schema_arrow, compression="zstd") as writer:
            for g in group:
                writer.write_table(source.read_row_group(int(g)))
        summary = ingest_file(db_path, part, progress=False)
        part.unlink()
        out.append({"part": i, "rows": summary.rows_accepted, "seconds": summary.seconds,
                    "new_prompts": summary.new_prompts, "peak_rss_mb_after": peak_rss_mb()["self"]})
        log.info("ingested part %d/%d: %s", i + 1, parts, out[-1])
    return out


def profile_top(profile: cProfile.Profile, n: int = 25) -> list[dict[str, Any]]:
    """The n functions with the most cumulative time."""
    stats = pstats.Stats(profile)
    rows = []
    for (filename, line, name), (_, ncalls, tottime, cumtime, _) in stats.stats.items():
        rows.append({"function": f"{Path(filename).name}:{line}({name})", "calls": ncalls,
                     "tottime": round(tottime, 2), "cumtime": round(cumtime, 2)})
    return sorted(rows, key=lambda r: -r["cumtime"])[:n]


def generate_and_ingest(args: argparse.Namespace, work: Path, home, data: dict[str, Any], out: Partial) -> None:
    """Write the synthetic logs and ingest them into the empty store at `home`."""
    from uniroute.synth import write_synthetic_logs

    data["step"] = "generate"
    t0 = time.perf_counter()
    synth = write_synthetic_logs(work / "logs", n_prompts=args.prompts, n_models=args.models,
                                 n_topics=args.topics, seed=args.seed)
    data["generate"] = {"seconds": round(time.perf_counter() - t0, 3), "rows": synth.n_rows,
                        "file_mb": round(synth.logs_path.stat().st_size / 1024**2, 1),
                        "peak_rss_mb_after": peak_rss_mb()["self"]}
    out.save()

    data["step"] = "ingest"
    t0 = time.perf_counter()
    parts = ingest_in_parts(synth.logs_path, args.ingest_parts, home.db_path, work)
    data["ingest"] = {"seconds": round(time.perf_counter() - t0, 3), "parts": parts,
                      "rows_per_second": round(sum(p["rows"] for p in parts) / (time.perf_counter() - t0)),
                      "store_mb": round(home.db_path.stat().st_size / 1024**2, 1)}
    out.save()
    if not args.keep_logs:
        shutil.rmtree(work / "logs")


def run_synthetic(args: argparse.Namespace, out: Partial) -> None:
    """Synthetic logs of --prompts x --models: generate, ingest, build with TF-IDF and MLflow."""
    from uniroute import build

    work = args.work / "synthetic"
    data = out.data
    data["config"] = {"prompts": args.prompts, "models": args.models, "topics": args.topics, "embedder": "tfidf",
                      "ingest_parts": args.ingest_parts, "dask_kmeans_min_prompts": build.DASK_KMEANS_MIN_PROMPTS,
                      "tuning_sample": build.TUNING_SAMPLE, "max_rss_gb": args.max_rss_gb}
    home = fresh_home(work / "home")

    timelines: list[RssTimeline] = []

    def tripped(rss: float) -> None:
        data["watchdog"] = {"rss_mb": round(rss, 1), "limit_mb": args.max_rss_gb * 1024, "at": now_utc(),
                            "step": data.get("step"), "rss_timeline": timelines[0].rows if timelines else None}
        out.save()

    with RssWatchdog(args.max_rss_gb * 1024, tripped) as watchdog:
        snapshot = work / "home_ingested"
        figures_file = snapshot / "bench_figures.json"
        wanted = {k: data["config"][k] for k in ("prompts", "models", "topics", "ingest_parts")} | {"seed": args.seed}
        earlier = json.loads(figures_file.read_text()) if figures_file.exists() else None
        if args.reuse_store and earlier is not None and earlier["config"] == wanted:
            # Build iterations on the same ingested store; its generate/ingest figures are the earlier ones.
            shutil.rmtree(home.home)
            shutil.copytree(snapshot, home.home)
            (home.home / figures_file.name).unlink()
            data.update(generate=earlier["generate"], ingest=earlier["ingest"], reused_store_from=earlier["date"])
            out.save()
        else:
            generate_and_ingest(args, work, home, data, out)
            data["step"] = "snapshot"
            if snapshot.exists():
                shutil.rmtree(snapshot)
            shutil.copytree(home.home, snapshot)
            figures_file.write_text(json.dumps({"config": wanted, "date": now_utc(), "generate": data["generate"],
                                                "ingest": data["ingest"]}, indent=2) + "\n")

        data["step"] = "build"
        out.save()
        timeline = RssTimeline(watchdog)
        timelines.append(timeline)
        watchdog.take_window()
        logging.getLogger("uniroute").addHandler(timeline)
        profile = cProfile.Profile() if args.profile else None
        if profile is not None:
            profile.enable()
        try:
            data["build"] = timed_build(home, "tfidf", args.seed)
        finally:
            if profile is not None:
                profile.disable()
                profile.dump_stats(str(work / "build.prof"))
                data["build_profile_top"] = profile_top(profile)
        logging.getLogger("uniroute").removeHandler(timeline)
        timeline.emit(logging.LogRecord("benchmarks.pipeline", logging.INFO, __file__, 0, "build returned", None, None))
        data["build"]["rss_timeline"] = timeline.rows
        data["build"]["peak_rss_mb_after"] = peak_rss_mb()["self"]
        data["build"]["store_mb"] = round(home.db_path.stat().st_size / 1024**2, 1)
        data["step"] = "done"
        data["watchdog_highest_rss_mb"] = round(watchdog.highest_mb, 1)
        out.save()


# ------------------------------------------------------------------------------------------ startup

IMPORT_PROBE = """
import json, time
t0 = time.perf_counter()
from uniroute.settings import apply_offline_environment
apply_offline_environment()
import uniroute.cli
t1 = time.perf_counter()
import uniroute.ingest, uniroute.onboard
t2 = time.perf_counter()
import mlflow, mlflow.pyfunc
t3 = time.perf_counter()
print(json.dumps({"cli": t1 - t0, "ingest_and_onboard": t2 - t1, "mlflow": t3 - t2}))
"""


def run_startup(args: argparse.Namespace, out: Partial) -> None:
    """Import seconds a fresh process pays before onboarding (what `uniroute onboard` adds to the latency)."""
    runs = []
    for _ in range(max(3, args.onboard_repeats)):
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", IMPORT_PROBE], capture_output=True, text=True, check=True)
        figures = {k: round(v, 3) for k, v in json.loads(done.stdout.strip().splitlines()[-1]).items()}
        figures["process_wall"] = round(time.perf_counter() - t0, 3)
        runs.append(figures)
    out.data["import_seconds"] = {"runs": runs, "median": {k: median([r[k] for r in runs]) for k in runs[0]}}


# ----------------------------------------------------------------------------------------- driver


def run_section(args: argparse.Namespace) -> int:
    """Child process: one section, figures to args.partial."""
    from uniroute.settings import apply_offline_environment

    apply_offline_environment()
    out = Partial(args.partial, {"section": args.section, "started": now_utc(), "load_average_start": load_average(),
                                 "library_at_start": library_state()})
    out.save()
    t0 = time.perf_counter()
    {"mmlu": run_mmlu, "synthetic": run_synthetic, "startup": run_startup}[args.section](args, out)
    out.data.update(seconds_total=round(time.perf_counter() - t0, 1), finished=now_utc(),
                    load_average_end=load_average(), library_at_end=library_state())
    out.save()
    return 0


def child_command(args: argparse.Namespace, section: str, partial: Path) -> list[str]:
    cmd = [sys.executable, "-m", "benchmarks.pipeline", "--section", section, "--partial", str(partial),
           "--work", str(args.work), "--seed", str(args.seed)]
    for name in ("warm_repeats", "onboard_repeats", "publish_repeats", "onboard_results", "mmlu_limit", "prompts",
                 "models", "topics", "ingest_parts", "max_rss_gb"):
        cmd += [f"--{name.replace('_', '-')}", str(getattr(args, name))]
    for flag in ("profile", "keep_logs", "reuse_store"):
        if getattr(args, flag):
            cmd.append(f"--{flag.replace('_', '-')}")
    if args.holdout:
        cmd += ["--holdout", args.holdout]
    return cmd


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--skip-mmlu", action="store_true", help="skip the mmlu_pro_cot29 section")
    parser.add_argument("--skip-1m", action="store_true", help="skip the large synthetic build")
    parser.add_argument("--skip-startup", action="store_true", help="skip the fresh-process import timings")
    parser.add_argument("--prompts", type=int, default=1_000_000)
    parser.add_argument("--models", type=int, default=100)
    parser.add_argument("--topics", type=int, default=16)
    parser.add_argument("--ingest-parts", type=int, default=10,
                        help="ingest the synthetic logs as this many files (one 100M-row file needs ~15 GB)")
    parser.add_argument("--warm-repeats", type=int, default=3)
    parser.add_argument("--onboard-repeats", type=int, default=3)
    parser.add_argument("--publish-repeats", type=int, default=3)
    parser.add_argument("--onboard-results", type=int, default=1000)
    parser.add_argument("--mmlu-limit", type=int, default=0, help="only the first N mmlu prompts (smoke runs)")
    parser.add_argument("--holdout", default=None, help="model to hold back for onboarding (default: best costed)")
    parser.add_argument("--max-rss-gb", type=float, default=12.0)
    parser.add_argument("--profile", action="store_true", help="cProfile the synthetic build")
    parser.add_argument("--reuse-store", action="store_true",
                        help="build on the synthetic store ingested by an earlier run with the same sizes")
    parser.add_argument("--keep-logs", action="store_true", help="keep the synthetic Parquet logs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", type=Path, default=Path("/tmp/uniroute-bench-pipeline"),
                        help="scratch folder for the UNIROUTE_HOMEs (never the repository)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--section", choices=SECTIONS, help=argparse.SUPPRESS)
    parser.add_argument("--partial", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.work = args.work.resolve()
    if REPO in (args.work, *args.work.parents):
        parser.error(f"--work {args.work} is inside the repository; use a scratch folder")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    if args.section:
        return run_section(args)

    for key, value in SINGLE_THREAD.items():
        os.environ.setdefault(key, value)
    previous = json.loads(args.out.read_text()) if args.out.exists() else {}
    report: dict[str, Any] = {
        "benchmark": "pipeline",
        "description": __doc__.split("\n\n")[0],
        "machine": machine_info(),
        "sections": previous.get("sections", {}),
    }
    sections = (("mmlu", args.skip_mmlu), ("startup", args.skip_startup), ("synthetic", args.skip_1m))
    wanted = [s for s, skip in sections if not skip]
    failed = []
    args.work.mkdir(parents=True, exist_ok=True)
    for section in wanted:
        partial = args.work / f"{section}.json"
        partial.unlink(missing_ok=True)
        cmd = child_command(args, section, partial)
        t0 = time.perf_counter()
        code = subprocess.call(cmd)
        figures = json.loads(partial.read_text()) if partial.exists() else {}
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        figures.update(
            exit_code=code,
            wall_seconds=round(time.perf_counter() - t0, 1),
            command=" ".join([Path(sys.executable).name, "-m", "benchmarks.pipeline", *(argv or sys.argv[1:])]),
            child_command=" ".join(cmd[1:]),
            children_peak_rss_mb_so_far=round(usage.ru_maxrss / 1024, 1),
        )
        report["sections"][section] = figures
        if code:
            failed.append(section)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2, default=str) + "\n")
        print(f"{section}: exit {code}, {figures['wall_seconds']} s -> {args.out}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
