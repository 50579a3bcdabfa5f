"""One prompt, one vector: what running `minilm-onnx` one prompt at a time costs against its padded batches.

Dynamic int8 quantization sets one activation scale per run, so a prompt embedded in a padded batch gets a
vector that depends on its batch-mates. The embedder now runs each prompt alone (MiniLMOnnxEmbedder.per_prompt);
this measures, on the same distinct RouterBench prompts (seeded sample), the wall time of one encode call over
all of them alone and in the old length-sorted padded batches of 32, and how far the batched vectors are from
the ones encoded alone (largest coordinate difference, smallest cosine). Runs alternate, medians reported; the
cores are shared, so the load average is recorded.

Run: `nice -n 10 .venv/bin/python -m benchmarks.speed.one_vector [--prompts 200] [--repeats 2] [--cache-dir DIR]`;
writes benchmarks/results/one_vector.json.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from benchmarks.runner import RESULTS_DIR, SHARED, load_average, machine_info, write_result
from uniroute.embed import make_embedder
from uniroute.embed.minilm_onnx import MiniLMOnnxEmbedder
from uniroute.settings import Settings


def prompts(n: int, seed: int = 0) -> list[str]:
    """n distinct RouterBench prompts, a seeded sample."""
    texts = sorted(set(pq.read_table(SHARED / "routerbench_subset" / "long.parquet", columns=["prompt"])
                       .column("prompt").to_pylist()))
    random.Random(seed).shuffle(texts)
    return texts[:n]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--cache-dir", type=Path, default=None, help="embedder model files (default: the home's)")
    args = parser.parse_args(argv)
    started, load_before = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), load_average()
    texts = prompts(args.prompts)
    alone = make_embedder("minilm-onnx", cache_dir=args.cache_dir or Settings().cache_dir, progress=False)
    batched = MiniLMOnnxEmbedder(alone.model_file, alone.fingerprint, per_prompt=False, progress=False)
    alone.encode(texts[:4])  # the session opened, outside the timings
    seconds: dict[str, list[float]] = {"alone": [], "padded_batches_of_32": []}
    vectors = {}
    for _ in range(args.repeats):
        for name, embedder in (("alone", alone), ("padded_batches_of_32", batched)):
            t0 = time.perf_counter()
            vectors[name] = embedder.encode(texts)
            seconds[name].append(time.perf_counter() - t0)
    diff = np.abs(vectors["alone"] - vectors["padded_batches_of_32"]).max()
    cosine = (vectors["alone"] * vectors["padded_batches_of_32"]).sum(axis=1).min()
    result = {
        "benchmark": "speed.one_vector", "prompts": len(texts), "repeats": args.repeats,
        "median_seconds": {k: round(statistics.median(v), 2) for k, v in seconds.items()}, "seconds": seconds,
        "batched_vs_alone_max_coordinate_difference": float(diff), "batched_vs_alone_min_cosine": float(cosine),
        "command": f"nice -n 10 .venv/bin/python -m benchmarks.speed.one_vector --prompts {args.prompts} "
                   f"--repeats {args.repeats}",
        "started": started, "load_average_before": load_before, "load_average_after": load_average(),
        "machine": machine_info(),
    }
    print(f"{len(texts)} prompts: alone {result['median_seconds']['alone']} s, padded batches of 32 "
          f"{result['median_seconds']['padded_batches_of_32']} s (medians of {args.repeats}); batched vectors differ "
          f"from alone by up to {diff:.4f} in a coordinate (cosine >= {cosine:.4f})")
    print(f"wrote {write_result(result, RESULTS_DIR / 'one_vector.json')}")


if __name__ == "__main__":
    main()
