"""The `synthetic` section of benchmarks.scale.pipeline: generate, ingest and build a large synthetic pool.

Run alone: `OMP_NUM_THREADS=1 .venv/bin/python -m benchmarks.scale.pipeline --skip-mmlu --skip-startup [--prompts N
--models M ...]`."""


from __future__ import annotations

import argparse
import cProfile
import json
import logging
import pstats
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.runner import Partial, RssTimeline, RssWatchdog, now_utc, peak_rss_mb
from benchmarks.scale import operations
from benchmarks.scale.operations import fresh_home, timed_build

log = logging.getLogger("benchmarks.scale")


def ingest_in_parts(logs_path: Path, parts: int, db_path: Path, work: Path) -> list[dict[str, Any]]:
    """Write the logs as `parts` Parquet files of whole row groups (whole prompts) and ingest each in turn."""
    import pyarrow.parquet as pq

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
        summary = operations.ingest(db_path, part, progress=False)
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
    """Synthetic logs of --prompts x --models: generate, ingest, build with --embedder and MLflow."""
    from uniroute.pipeline.build import nightly as build

    work = args.work / "synthetic"
    data = out.data
    data["config"] = {"prompts": args.prompts, "models": args.models, "topics": args.topics, "embedder": args.embedder,
                      "ingest_parts": args.ingest_parts, "tuning_sample": build.TUNING_SAMPLE,
                      "max_rss_gb": args.max_rss_gb}
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
            data["build"] = timed_build(home, args.embedder, args.seed, cache_dir=args.work / "cache")
        finally:
            if profile is not None:
                profile.disable()
                profile.dump_stats(str(work / "build.prof"))
                data["build_profile_top"] = profile_top(profile)
        logging.getLogger("uniroute").removeHandler(timeline)
        timeline.emit(logging.LogRecord("benchmarks.scale", logging.INFO, __file__, 0, "build returned", None, None))
        data["build"]["rss_timeline"] = timeline.rows
        data["build"]["peak_rss_mb_after"] = peak_rss_mb()["self"]
        data["build"]["store_mb"] = round(home.db_path.stat().st_size / 1024**2, 1)
        data["step"] = "done"
        data["watchdog_highest_rss_mb"] = round(watchdog.highest_mb, 1)
        out.save()
