"""Pilot: is a static table fitted to minilm-onnx's sentence vectors ("tokenlearn", embed.static_tuned) closer to
the teacher than the distilled `static` table, and what does the fit cost (issue 28, item 1)?

On one shared dataset's prompts (as its evaluation embeds them): a seeded 80/20 split; the table is fitted on the
80% (texts and teacher vectors only) for each ridge strength; agreement with the teacher is measured on the
held-out 20% (never fitted on) and on as many fitted prompts (what `uniroute evaluate`, which fits on every prompt,
sees): the share of prompts whose nearest other prompt is the teacher's, and the Spearman correlation of pairwise
similarities over 20,000 random pairs (benchmarks.speed.embedding.agreement, as docs/results/embedders.md).
Speed: prompts/s of encode on 2,000 held-out prompts, static and tuned, one thread, best of 2.

The teacher vectors come through the embedding cache of UNIROUTE_HOME (copy a home that has them; nothing else is
written). Run: `UNIROUTE_HOME=/tmp/tl8home OMP_NUM_THREADS=1 nice -n 15 .venv/bin/python -m
benchmarks.quality.static_tuned_pilot --dataset routerdc_model7 --out benchmarks/results/static_tuned_pilot.json`
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from benchmarks.runner import SHARED, load_average, now_utc
from benchmarks.speed.embedding import DATASETS, agreement
from uniroute import experiments as ev
from uniroute import operations
from uniroute.embed import load_minilm_onnx, load_static
from uniroute.embed.static_tuned import fit_static_tuned
from uniroute.settings import apply_offline_environment, settings_from_environment


def dataset_texts(name: str) -> list[str]:
    frame = pq.read_table(SHARED / name / "long.parquet", columns=["prompt_id", "prompt"]).to_pandas()
    frame = frame.drop_duplicates("prompt_id").sort_values("prompt_id")
    return ev.prompt_texts(frame["prompt"].tolist(), DATASETS[name])


def speed(embedder, texts: list[str]) -> float:
    best = float("inf")
    for _ in range(2):
        started = time.perf_counter()
        embedder.encode(texts)
        best = min(best, time.perf_counter() - started)
    return round(len(texts) / best, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="routerdc_model7", choices=sorted(DATASETS))
    parser.add_argument("--alphas", default="0.1,1,10")
    parser.add_argument("--measured", type=int, default=4000, help="prompts per agreement sample")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    settings = settings_from_environment()
    apply_offline_environment(settings)
    ctx = operations.Context.of(settings)
    started_load = load_average()
    texts = dataset_texts(args.dataset)
    teacher = load_minilm_onnx(settings.cache_dir, progress=False)
    base = load_static(settings.cache_dir, progress=False)
    Y, _ = operations.prompt_embeddings(ctx, texts, "minilm-onnx", args.seed)  # the cache: no teacher cost

    def from_cache(model, some: list[str]) -> np.ndarray:
        return operations.embedded(ctx, some, model)

    rng = np.random.default_rng(args.seed)
    order = rng.permutation(len(texts))
    cut = int(0.8 * len(texts))
    fit_pos, held_pos = order[:cut], order[cut:]
    held = held_pos[: args.measured]
    seen = fit_pos[: args.measured]
    fit_texts = [texts[i] for i in fit_pos]
    result = {"dataset": args.dataset, "prompts": len(texts), "fitted_on": len(fit_pos), "held_out": len(held),
              "teacher_id": teacher.embedder_id, "base_id": base.embedder_id, "at": now_utc(),
              "load_average_before": started_load, "runs": []}
    base_held = base.encode([texts[i] for i in held])
    result["static"] = {"held_out": agreement(Y[held], base_held, seed=args.seed),
                        "fitted": agreement(Y[seen], base.encode([texts[i] for i in seen]), seed=args.seed),
                        "prompts_per_s": speed(base, [texts[i] for i in held[:2000]])}
    print("static", json.dumps(result["static"]), flush=True)
    for alpha in (float(a) for a in args.alphas.split(",")):
        started = time.perf_counter()
        tuned = fit_static_tuned(base, teacher, fit_texts, teacher_vectors=from_cache, alpha=alpha, progress=False)
        seconds = time.perf_counter() - started
        run = {"alpha": alpha, "fit_seconds": round(seconds, 1), "embedder_id": tuned.embedder_id,
               "held_out": agreement(Y[held], tuned.encode([texts[i] for i in held]), seed=args.seed),
               "fitted": agreement(Y[seen], tuned.encode([texts[i] for i in seen]), seed=args.seed),
               "prompts_per_s": speed(tuned, [texts[i] for i in held[:2000]])}
        result["runs"].append(run)
        print(json.dumps(run), flush=True)
    result["load_average_after"] = load_average()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
