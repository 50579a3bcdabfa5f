"""The embedders side by side: speed against bare sentence-transformers, agreement with `minilm`, and routing Area.

One run measures, on the same 2,000 distinct real prompts (a seeded third from each shared dataset; RouterBench's
last block, as its evaluation embeds it):
- throughput of each embedder through `embed_batches` (the in-process path of the product), and of bare
  `SentenceTransformer.encode` on a plainly loaded all-MiniLM-L6-v2 (same weights, float32, 256-token cap,
  batch 128): the speed-up column is bare time / embedder time. One thread each (torch and ONNX Runtime),
  runs alternate in a rotating order, medians reported (the cores are shared, STACK.md);
- agreement with `minilm`: cosine of the two vectors of a prompt (only where both live in the same 384-d
  space), the share of prompts whose nearest other prompt is the same, and the Spearman correlation of
  pairwise similarities over 20,000 random pairs (comparable across spaces, so the static embedder too);
- the cost of building each model file once (fresh cache folder) and of a cold process that loads an
  embedder and embeds two prompts (what `uniroute route` pays);
- routing Area on the three datasets: `uniroute evaluate --trials 100 --seed 0 --methods zero,knn,kmeans,
  learnedmap` per embedder (RouterBench with `--prompt-part last-block`), reusing a result file of
  benchmarks/results/embedders/ (or the README's quality run in docs/results/) made with the same settings,
  embedder recipe and at least as many trials, and a
  paired sign test of each embedder against the best measured one per dataset and method (over the trials
  both have: trial t is the same split for every embedder). `--no-evaluate` collects saved results of any length.

Results: benchmarks/results/embedding.json, and docs/results/embedders.md generated from it
(`tools/pages/embedders_table.py`). Run: `OMP_NUM_THREADS=1 .venv/bin/python -m benchmarks.speed.embedding
[--home DIR] [--repeats 2]`; the evaluations are CPU-heavy (MiniLM embeds about 36k prompts once per home).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from benchmarks.runner import REPO, RESULTS_DIR, SHARED, load_average, machine_info, now_utc, write_result
from uniroute import embed
from uniroute import experiments as ev
from uniroute.settings import apply_offline_environment

RESULTS = RESULTS_DIR / "embedding.json"
EVALUATIONS = RESULTS_DIR / "embedders"
DATASETS = {"routerbench_subset": "last-block", "routerdc_model7": "full", "mmlu_pro_cot29": "full"}
# The embedders compared, by label: the factory's three, and the float32 ONNX graph as the exactness check.
MEASURED = ("minilm", "minilm-onnx", "minilm-onnx-f32", "static")
# The embedders whose routing Area the page compares. `static-tuned` is fitted on the prompts it embeds (an
# evaluation fits it once on every prompt's text), so it has no id, cold process or build of its own ahead of a
# dataset: STANDALONE are the others.
ROUTED = ("minilm", "minilm-onnx", "static", "static-tuned")
STANDALONE = tuple(name for name in ROUTED if not embed.embedder_kind(name).fitted)
METHODS = ("zero", "knn", "kmeans", "kmeans_shrunk", "learnedmap", "auto")
# The README's quality runs (tools/pages/results_doc.py): 100 trials, same seed and splits, of the default
# embedder; collected as that embedder's result where they have more trials than its own file here.
QUALITY_RUNS = REPO / "docs" / "results"
TRIALS, SEED = 100, 0
ROUTE_PROMPTS = ["Which planet has the most moons?", "Write a haiku about autumn rain."]

log = logging.getLogger("benchmarks.speed.embedding")


def sample_prompts(n: int, seed: int = 0) -> list[str]:
    """n distinct prompt texts, a seeded third from each dataset, as each dataset's evaluation embeds them."""
    texts: list[str] = []
    for i, (name, part) in enumerate(DATASETS.items()):
        frame = pq.read_table(SHARED / name / "long.parquet", columns=["prompt_id", "prompt"]).to_pandas()
        frame = frame.drop_duplicates("prompt_id").sort_values("prompt_id")
        take = n // len(DATASETS) + (1 if i < n % len(DATASETS) else 0)
        texts += ev.prompt_texts(frame.sample(take, random_state=seed)["prompt"].tolist(), part)
    return texts


def make_measured(label: str, cache_dir: Path, threads: int) -> Any:
    """The embedder under a label of MEASURED, at `threads` threads."""
    if label == "minilm":
        return embed.load_minilm(progress=False)
    if label in ("minilm-onnx", "minilm-onnx-f32"):
        quantization = "none" if label.endswith("f32") else "int8-per-channel"
        return embed.load_minilm_onnx(cache_dir, quantization=quantization, threads=threads, progress=False)
    return embed.load_static(cache_dir, progress=False)


def timed(fn, *args, **kwargs) -> tuple[float, Any]:
    started = time.perf_counter()
    result = fn(*args, **kwargs)
    return time.perf_counter() - started, result


def agreement(reference: np.ndarray, vectors: np.ndarray, seed: int = 0, pairs: int = 20_000) -> dict[str, Any]:
    """How close (n, d) vectors are to (n, 384) minilm vectors of the same prompts (both unit rows)."""
    from scipy.stats import spearmanr

    out: dict[str, Any] = {}
    if vectors.shape == reference.shape:
        cosine = np.sum(vectors * reference, axis=1)
        out["cosine_to_minilm"] = {"mean": round(float(cosine.mean()), 5), "min": round(float(cosine.min()), 5),
                                   "p01": round(float(np.quantile(cosine, 0.01)), 5)}
    sims_ref, sims = reference @ reference.T, vectors @ vectors.T  # (n, n)
    np.fill_diagonal(sims_ref, -2.0)
    np.fill_diagonal(sims, -2.0)
    out["same_nearest_neighbour"] = round(float((sims_ref.argmax(1) == sims.argmax(1)).mean()), 4)
    rng = np.random.default_rng(seed)
    i, j = rng.integers(0, len(reference), (2, pairs))
    keep = i != j
    out["pairwise_similarity_spearman"] = round(float(spearmanr(sims_ref[i[keep], j[keep]],
                                                                sims[i[keep], j[keep]]).statistic), 4)
    return out


def throughput(texts: list[str], cache_dir: Path, threads: int, repeats: int) -> dict[str, Any]:
    """Seconds per pass over texts for bare sentence-transformers and each embedder, and their agreement."""
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(threads)
    bare = SentenceTransformer(str(embed.minilm_path()), device="cpu")
    embedders = {label: make_measured(label, cache_dir, threads) for label in MEASURED}
    runners = {"bare-sentence-transformers": lambda: bare.encode(texts, batch_size=128, normalize_embeddings=True)}
    runners |= {label: (lambda e=e: embed.embed_batches(texts, e)) for label, e in embedders.items()}
    bare.encode(texts[:8])  # warm-up: sessions, tables and lazy imports stay out of the timing
    for e in embedders.values():
        e.encode(texts[:8])
    seconds: dict[str, list[float]] = {label: [] for label in runners}
    vectors: dict[str, np.ndarray] = {}
    labels = list(runners)
    for r in range(repeats):
        for label in labels[r % len(labels):] + labels[: r % len(labels)]:
            took, vectors[label] = timed(runners[label])
            seconds[label].append(round(took, 2))
            log.warning("repeat %d %s: %.1f s (%.1f prompts/s)", r, label, took, len(texts) / took)
    bare_s = statistics.median(seconds["bare-sentence-transformers"])
    out: dict[str, Any] = {"bare-sentence-transformers": {"seconds": seconds["bare-sentence-transformers"],
                                                          "prompts_per_s": round(len(texts) / bare_s, 1)}}
    for label, e in embedders.items():
        median = statistics.median(seconds[label])
        out[label] = {"embedder_id": e.embedder_id, "dim": e.dim, "seconds": seconds[label],
                      "prompts_per_s": round(len(texts) / median, 1), "speedup_vs_bare": round(bare_s / median, 2),
                      **agreement(vectors["minilm"], vectors[label])}
    return out


def embedder_id(name: str, cache_dir: Path) -> str | None:
    """The id of an embedder of ROUTED built in cache_dir; None for a fitted one (its id names what it was fitted
    on, so each dataset's run has its own)."""
    if embed.embedder_kind(name).fitted:
        return None
    return embed.make_embedder(name, cache_dir=cache_dir, progress=False).embedder_id


def build_fresh(cache_dir: Path, threads: int) -> dict[str, Any]:
    """Seconds to build each model file into a fresh folder, and whether it is the same file as cache_dir's."""
    import torch

    torch.set_num_threads(threads)
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, load in (("minilm-onnx", embed.load_minilm_onnx), ("static", embed.load_static)):
            seconds, built = timed(load, Path(tmp), progress=False)
            out[name] = {"seconds": round(seconds, 1), "embedder_id": built.embedder_id,
                         "same_file_as_home_cache": built.embedder_id == embedder_id(name, cache_dir)}
    return out


def cold_route_seconds(name: str, cache_dir: Path, repeats: int = 3) -> dict[str, float]:
    """A fresh process: import + load the embedder, then embed two prompts (medians of `repeats`)."""
    code = ("import json, sys, time; t0 = time.perf_counter(); from pathlib import Path; from uniroute import embed\n"
            "e = embed.make_embedder(sys.argv[1], cache_dir=Path(sys.argv[2]), progress=False)\n"
            "t1 = time.perf_counter()\n"
            f"e.encode({ROUTE_PROMPTS!r}); t2 = time.perf_counter()\n"
            "print(json.dumps({'load': t1 - t0, 'encode': t2 - t1, 'torch': 'torch' in sys.modules}))\n")
    runs = []
    for _ in range(repeats):
        started = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", code, name, str(cache_dir)], capture_output=True, text=True,
                             check=True, env={**os.environ, "PYTHONPATH": str(REPO)})
        runs.append({**json.loads(out.stdout.strip().splitlines()[-1]), "process": time.perf_counter() - started})
    return {"process_seconds": round(statistics.median(r["process"] for r in runs), 2),
            "load_seconds": round(statistics.median(r["load"] for r in runs), 2),
            "encode_seconds": round(statistics.median(r["encode"] for r in runs), 3),
            "imports_torch": any(r["torch"] for r in runs)}


def recipe(embedder_id: str) -> str:
    """An embedder id without its build fingerprint (a trailing 12-hex field): `static` builds of one recipe differ
    in the last bits across thread settings (the page says so), and each is a fair sample of that embedder."""
    head, _, tail = embedder_id.rpartition(":")
    return head if len(tail) == 12 and all(c in "0123456789abcdef" for c in tail) else embedder_id


def saved_results(dataset: str, name: str) -> list[tuple[Path, dict[str, Any]]]:
    """The saved evaluations of an embedder on a dataset: the README's quality run first (at equal trials the page
    then quotes what the README quotes), then its own file here."""
    paths = [QUALITY_RUNS / f"{dataset}.json", EVALUATIONS / f"{dataset}.{name}.json"]
    return [(path, json.loads(path.read_text())) for path in paths if path.exists()]


def same_embedder(saved_id: str, name: str, embedder_id: str | None) -> bool:
    """Whether a saved run's embedder is this one: its recipe, or for a fitted embedder (no id ahead of the data)
    its name, the id's first field."""
    if embedder_id is None:
        return saved_id.split(":")[0] == name
    return recipe(saved_id) == recipe(embedder_id)


def evaluation(dataset: str, name: str, home: Path, embedder_id: str | None, trials: int,
               run: bool = True) -> tuple[Path, dict[str, Any]] | None:
    """The saved `uniroute evaluate` result of one embedder on one dataset (with the most trials), run first if
    missing, stale or with fewer than `trials` trials (without `run`: any matching result, or None)."""
    path = EVALUATIONS / f"{dataset}.{name}.json"
    part = DATASETS[dataset]
    matching = sorted(((p, r) for p, r in saved_results(dataset, name) if r["seed"] == SEED and
                       same_embedder(r["embedder_id"], name, embedder_id) and r.get("prompt_part") == part),
                      key=lambda pr: -pr[1]["trials"])
    if not run:  # a quick run of some of METHODS counts too: its missing methods stay "not measured"
        if not matching:
            log.warning("no result of %s on %s with %s yet: left out", name, dataset, embedder_id)
        return matching[0] if matching else None
    if not matching or matching[0][1]["trials"] < trials or not set(METHODS) <= set(matching[0][1]["methods"]):
        log.warning("evaluating %s on %s (%d trials)", name, dataset, trials)
        path.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "uniroute", "evaluate", "--data", str(SHARED / dataset), "--trials",
                        str(trials), "--seed", str(SEED), "--embedder", name, "--methods", ",".join(METHODS),
                        "--prompt-part", part, "--out", str(path), "--json"], check=True, stdout=subprocess.DEVNULL,
                       env={**os.environ, "UNIROUTE_HOME": str(home), "PYTHONPATH": str(REPO)})
        return path, json.loads(path.read_text())
    return matching[0]


def against_best(runs: dict[str, dict[str, Any] | None]) -> dict[str, dict[str, Any]]:
    """Per method: the measured embedder of highest mean Area over the trials all have, and each other one's
    paired sign test against it.

    Trial t is the same split for every embedder (default_rng((seed, t))), so runs of different lengths pair
    over their common first trials; the count paired is stored beside each test.
    """
    out: dict[str, dict[str, Any]] = {}
    for m in METHODS:
        measured = {name: saved for name, saved in runs.items() if saved is not None and m in saved["methods"]}
        # The best over the trials every measured embedder has: means over runs of different lengths do not compare.
        common = min((len(saved["per_trial_area"][m]) for saved in measured.values()), default=0)
        best = max(measured, key=lambda n: float(np.mean(measured[n]["per_trial_area"][m][:common]))) \
            if measured else None
        tests = {}
        for name, saved in measured.items():
            if name == best:
                continue
            a, b = saved["per_trial_area"][m], measured[best]["per_trial_area"][m]
            n = min(len(a), len(b))
            tests[name] = {**ev.sign_test(a[:n], b[:n]), "trials": n}
        out[m] = {"best": best, "tests": tests}
    return out


def routing(home: Path, ids: dict[str, str], trials: int, run: bool = True) -> dict[str, Any]:
    """Per dataset: each embedder's mean Area per method, and its paired sign test against the best one there.

    Without `run`, only saved results are collected (any trial count); a missing one is recorded as None.
    """
    out: dict[str, Any] = {}
    for dataset in DATASETS:
        found = {name: evaluation(dataset, name, home, ids[name], trials, run) for name in ROUTED}
        runs = {name: None if f is None else f[1] for name, f in found.items()}
        out[dataset] = {"prompt_part": DATASETS[dataset], "vs_best": against_best(runs), "embedders": {
            name: None if f is None else {
                "embedder_id": f[1]["embedder_id"], "n_prompts": f[1]["n_prompts"], "trials": f[1]["trials"],
                "seconds": round(f[1]["seconds"], 1), "file": str(f[0].relative_to(REPO)),
                "area": {m: round(f[1]["methods"][m]["area"], 4) for m in METHODS if m in f[1]["methods"]}}
            for name, f in found.items()}}
    return out


SECTIONS = ("throughput", "build", "route", "routing")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--prompts", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1, help="torch and ONNX Runtime threads (shared cores)")
    parser.add_argument("--home", type=Path, default=REPO / ".uniroute" / "bench-embedders",
                        help="UNIROUTE_HOME of the evaluations (its embedding cache and built model files)")
    parser.add_argument("--sections", default=",".join(SECTIONS),
                        help="which parts to measure now; the others keep their figures in --out")
    parser.add_argument("--trials", type=int, default=TRIALS,
                        help="routing: run an evaluation whose saved result has fewer trials than this")
    parser.add_argument("--no-evaluate", action="store_true",
                        help="routing: collect the saved evaluations only, run none (missing ones stay empty)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    sections = [s.strip() for s in args.sections.split(",") if s.strip()]
    if unknown := set(sections) - set(SECTIONS):
        parser.error(f"unknown sections {sorted(unknown)}; known: {', '.join(SECTIONS)}")
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s: %(message)s")
    apply_offline_environment()
    cache_dir = args.home / "cache"
    # Sections measured at different times share one file; each records its own command, time and load.
    result: dict[str, Any] = json.loads(args.out.read_text()) if args.out.exists() else {}
    result = {k: v for k, v in result.items() if k in SECTIONS}
    result.update({
        "what": "embedders side by side: speed vs bare sentence-transformers, agreement with minilm, routing Area",
        "machine": machine_info(),
        "prompts": f"{args.prompts} distinct prompts: a seeded third of each of {', '.join(DATASETS)}",
    })
    for section in sections:
        flags = {"throughput": f" --prompts {args.prompts} --repeats {args.repeats} --threads {args.threads}",
                 "build": f" --threads {args.threads}", "route": "",
                 "routing": f" --trials {args.trials}" + (" --no-evaluate" if args.no_evaluate else "")}[section]
        command = f"OMP_NUM_THREADS=1 .venv/bin/python -m benchmarks.speed.embedding --sections {section}{flags}"
        stamp = {"command": command,
                 "started": now_utc(), "load_average_before": load_average(), "threads": args.threads}
        if section == "throughput":
            figures = throughput(sample_prompts(args.prompts), cache_dir, args.threads, args.repeats)
            stamp["repeats"] = args.repeats
        elif section == "build":
            figures = build_fresh(cache_dir, args.threads)
        elif section == "route":
            figures = {name: cold_route_seconds(name, cache_dir) for name in STANDALONE}
        else:
            ids = {name: embedder_id(name, cache_dir) for name in ROUTED}
            figures = routing(args.home, ids, args.trials, run=not args.no_evaluate)
            stamp.update(trials=args.trials, seed=SEED, methods=list(METHODS))
        result[section] = {**stamp, "load_average_after": load_average(), "figures": figures}
        write_result(result, args.out)
    print(f"wrote {args.out}; docs/results/embedders.md quotes it: python -m tools.pages.embedders_table")


if __name__ == "__main__":
    main()
