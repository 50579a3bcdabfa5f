"""Embedding throughput: `uniroute.embed.embed_cached` (cold and warm cache) beside bare sentence-transformers.

Texts: 1,000 distinct prompts of the shared mmlu_pro_cot29/long.parquet (seeded sample). The baseline is
`SentenceTransformer.encode` on a plainly loaded all-MiniLM-L6-v2 (same weights, same 256-token cap, float32),
so the ratio cold/direct is our overhead: hashing, the DuckDB lookup, batching, writing the cache. Both
models are loaded and warmed up before timing; runs alternate and the medians are reported (the cores
here are shared and contended, STACK.md).

Also measured: a warm-cache pass over the same prompts, TF-IDF (fit + cold pass), a bfloat16 vs float32
check of MiniLM (speed and cosine), and a cache lookup at scale (350k stored 384-d vectors, filled by a
random "embedder" so that only the cache is timed).

Run: `OMP_NUM_THREADS=1 .venv/bin/python -m benchmarks.embedding [--prompts 1000] [--repeats 2]`;
results go to benchmarks/results/embedding.json.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from uniroute import embed
from uniroute.settings import apply_offline_environment

RESULTS = Path(__file__).resolve().parent / "results" / "embedding.json"
SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "datasets"


def sample_prompts(n: int, seed: int = 0) -> list[str]:
    """n distinct prompt texts of mmlu_pro_cot29 (seeded sample, in prompt_id order)."""
    table = pq.read_table(SHARED / "mmlu_pro_cot29" / "long.parquet", columns=["prompt_id", "prompt"])
    frame = table.to_pandas().drop_duplicates("prompt_id").sort_values("prompt_id")
    return frame.sample(n, random_state=seed)["prompt"].tolist()


class RandomEmbedder:
    """Unit vectors from a seeded generator: stands in for a model when only the cache is timed."""

    embedder_id = "random:bench:d384"
    dim = 384
    progress = False

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        rng = np.random.default_rng(len(texts))
        vectors = rng.standard_normal((len(texts), self.dim)).astype(np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def timed(fn, *args, **kwargs) -> tuple[float, object]:
    started = time.perf_counter()
    result = fn(*args, **kwargs)
    return time.perf_counter() - started, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--prompts", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (the cores are shared)")
    parser.add_argument("--bf16-prompts", type=int, default=64)
    parser.add_argument("--lookup-rows", type=int, default=350_000)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    apply_offline_environment()

    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(args.threads)
    texts = sample_prompts(args.prompts)
    ours = embed.make_embedder("minilm", progress=False)
    plain = SentenceTransformer(str(embed.minilm_path()), device="cpu")
    ours.encode(texts[:8])
    plain.encode(texts[:8])

    direct_s, cold_s, warm_s = [], [], []
    agreement = None
    for _ in range(args.repeats):
        seconds, direct = timed(plain.encode, texts, batch_size=128, normalize_embeddings=True)
        direct_s.append(seconds)
        with tempfile.TemporaryDirectory() as tmp:
            db_path = Path(tmp) / "bench.duckdb"
            seconds, cold = timed(embed.embed_cached, db_path, texts, ours)
            cold_s.append(seconds)
            seconds, warm = timed(embed.embed_cached, db_path, texts, ours)
            warm_s.append(seconds)
        assert np.array_equal(cold, warm)
        # Prompts within 256 tokens embed identically either way; longer ones differ (we keep the tail).
        agreement = float(np.median(np.sum(direct * cold, axis=1)))

    # bfloat16 against float32 on the same prompts: speed and cosine.
    bf16 = embed.MiniLMEmbedder(bfloat16=True, progress=False)
    few = texts[: args.bf16_prompts]
    bf16.encode(few[:4])
    f32_seconds, f32_vectors = timed(ours.encode, few)
    bf16_seconds, bf16_vectors = timed(bf16.encode, few)
    cosine = np.sum(f32_vectors * bf16_vectors, axis=1)
    sims_f32, sims_bf16 = f32_vectors @ f32_vectors.T, bf16_vectors @ bf16_vectors.T
    np.fill_diagonal(sims_f32, -2.0)
    np.fill_diagonal(sims_bf16, -2.0)

    # TF-IDF: fitted on the 1,000 prompts, then a cold pass through the cache.
    fit_seconds, tfidf = timed(embed.fit_tfidf, texts, seed=0, progress=False)
    with tempfile.TemporaryDirectory() as tmp:
        tfidf_seconds, _ = timed(embed.embed_cached, Path(tmp) / "bench.duckdb", texts, tfidf)

    # The cache at scale: store lookup_rows vectors, then look all of them up again.
    many = [f"cache benchmark prompt {i}" for i in range(args.lookup_rows)]
    with tempfile.TemporaryDirectory() as tmp:
        db_path = Path(tmp) / "bench.duckdb"
        fill_seconds, _ = timed(embed.embed_cached, db_path, many, RandomEmbedder())
        lookup_seconds = [timed(embed.embed_cached, db_path, many, RandomEmbedder())[0] for _ in range(3)]

    n = len(texts)
    direct_med, cold_med, warm_med = (statistics.median(s) for s in (direct_s, cold_s, warm_s))
    result = {
        "what": "MiniLM prompts/s: embed_cached (cold, warm) vs SentenceTransformer.encode on the same prompts",
        "command": f".venv/bin/python -m benchmarks.embedding --prompts {args.prompts} --repeats {args.repeats} "
                   f"--threads {args.threads} --bf16-prompts {args.bf16_prompts}",
        "load_average_after": [round(x, 2) for x in os.getloadavg()],  # the cores may be shared
        "data": f"{n} distinct prompts of mmlu_pro_cot29/long.parquet (seeded sample)",
        "embedder_id": ours.embedder_id,
        "torch_threads": args.threads,
        "repeats": args.repeats,
        "direct_prompts_per_s": round(n / direct_med, 1),
        "embed_cached_cold_prompts_per_s": round(n / cold_med, 1),
        "embed_cached_warm_prompts_per_s": round(n / warm_med, 1),
        "cold_over_direct_time_ratio": round(cold_med / direct_med, 3),
        "seconds": {"direct": direct_s, "cold": cold_s, "warm": warm_s},
        "median_cosine_ours_vs_direct": round(agreement, 5),
        "bfloat16_check": {
            "prompts": len(few),
            "float32_prompts_per_s": round(len(few) / f32_seconds, 1),
            "bfloat16_prompts_per_s": round(len(few) / bf16_seconds, 1),
            "cosine_min": round(float(cosine.min()), 5),
            "cosine_median": round(float(np.median(cosine)), 5),
            "nearest_neighbour_agreement": round(float((sims_f32.argmax(1) == sims_bf16.argmax(1)).mean()), 4),
        },
        "tfidf": {
            "fit_seconds_on_prompts": round(fit_seconds, 2),
            "embed_cached_cold_prompts_per_s": round(n / tfidf_seconds, 1),
            "embedder_id": tfidf.embedder_id,
        },
        "cache_lookup": {
            "rows": args.lookup_rows,
            "fill_seconds": round(fill_seconds, 2),
            "warm_lookup_seconds": [round(s, 2) for s in lookup_seconds],
            "warm_lookup_rows_per_s": round(args.lookup_rows / statistics.median(lookup_seconds)),
        },
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
