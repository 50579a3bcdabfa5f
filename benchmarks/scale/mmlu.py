"""The `mmlu` section of benchmarks.scale.pipeline: build, onboarding latency and publish on mmlu_pro_cot29.

Run alone: `OMP_NUM_THREADS=1 .venv/bin/python -m benchmarks.scale.pipeline --skip-1m --skip-startup [--mmlu-limit N
...]`."""


from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.runner import SHARED, Partial, median
from benchmarks.scale import operations
from benchmarks.scale.operations import fresh_home, timed_build

MMLU = SHARED / "mmlu_pro_cot29" / "long.parquet"
ONBOARD_TARGET_SECONDS = 5.0

log = logging.getLogger("benchmarks.scale")


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
    vectors = operations.embedded(source_db, texts, embedder)  # all cached: a lookup, nothing embedded
    replay = ReplayEmbedder(embedder.embedder_id, embedder.dim, dict(zip(texts, vectors, strict=True)))
    operations.embedded(target_db, texts, replay)
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
    from uniroute.ingest import process_inbox
    from uniroute.settings import Settings

    restore_home(template, home)
    settings = Settings(home=home)
    settings.inbox_dir.mkdir(parents=True, exist_ok=True)
    shutil.copy(results_file, settings.inbox_dir / results_file.name)
    t0 = time.perf_counter()
    outcomes = process_inbox(settings.db_path, settings.inbox_dir)
    t_ingest = time.perf_counter()
    landed = [m for o in outcomes if o.summary is not None for m in o.summary.landed_models]
    result = operations.onboard(settings, landed, mlflow=mlflow, artifact_root=artifact_root)
    t_end = time.perf_counter()
    routable = model in operations.champion_models(settings.db_path)
    if not routable or landed != [model]:
        raise RuntimeError(f"onboarding landed {landed} and the champion routes {model}: {routable}")
    return {
        "seconds": round(t_end - t0, 3),
        "ingest_seconds": round(t_ingest - t0, 3),
        "onboard_seconds": round(t_end - t_ingest, 3),
        "embedded_prompts": result.embedded_prompts,
        "mlflow": mlflow,
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
    summary = operations.ingest(full.db_path, logs_path, progress=False)
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
    operations.ingest(held.db_path, without, progress=False)
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
            result = operations.publish(onboarded, force=True, mlflow=mlflow, artifact_root=held.mlflow_artifacts)
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
