"""Pilot: what static-tuned's fit text and ridge strength do to agreement with the teacher on prompts it never saw.

Reads the teacher vectors static_tuned_teacher.py saved (a seeded order of each shared dataset; the first
--held-out prompts of each order are never fitted on). For each target dataset D and each fit scope:
- `own`: D's fit pool only (what a build fitted on one dataset's prompts serves to more of the same);
- `others`: the other two datasets' fit pools (transfer: D's prompts are all new);
- `all`: all three pools (a table refitted on every prompt the store has seen, D's held-out still new);
and each ridge strength, it fits the table and measures, on D's held-out prompts against the teacher: the
Spearman correlation of pairwise cosines (20,000 seeded pairs), mean cosine to the teacher, and nearest-centre
agreement (K-means on the teacher's vectors, K = 16; each prompt's nearest centre when the centres are the
student's means of the same members).
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr
from sklearn.cluster import KMeans

from uniroute.embed import make_embedder
from uniroute.embed.base import unit_rows
from uniroute.embed.static_tuned import fit_static_tuned

DATASETS = ("routerbench_subset", "routerdc_model7", "mmlu_pro_cot29")


@dataclass(frozen=True)
class Teacher:
    embedder_id: str


def load(folder: Path, held_out: int, cap: int | None) -> dict[str, dict]:
    out = {}
    for name in DATASETS:
        with np.load(folder / f"{name}.npz") as saved:
            texts, vectors = list(saved["texts"]), saved["vectors"].astype(np.float64)
            teacher_id = str(saved["teacher_id"])
        pool = slice(held_out, None if cap is None else held_out + cap)
        out[name] = {"held_texts": texts[:held_out], "held_Y": vectors[:held_out],
                     "fit_texts": texts[pool], "fit_Y": vectors[pool], "teacher_id": teacher_id}
    return out


def saved_vectors(lookup: dict[str, np.ndarray]):
    """The fit's teacher_vectors: the saved teacher vector of each text (no teacher runs here)."""
    return lambda _teacher, texts: np.stack([lookup[t] for t in texts])


def agreement(student: np.ndarray, teacher: np.ndarray, seed: int) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    n = len(teacher)
    a, b = rng.integers(0, n, 20000), rng.integers(0, n, 20000)
    keep = a != b
    a, b = a[keep], b[keep]
    rho = spearmanr(np.einsum("ij,ij->i", student[a], student[b]),
                    np.einsum("ij,ij->i", teacher[a], teacher[b])).statistic
    labels = KMeans(16, n_init=3, random_state=seed).fit_predict(teacher)
    centres = unit_rows(np.stack([student[labels == k].mean(axis=0) for k in range(16)]))
    nearest = np.argmax(student @ centres.T, axis=1)
    out = {"spearman": float(rho), "nearest_centre": float(np.mean(nearest == labels))}
    if student.shape[1] == teacher.shape[1]:
        out["cosine"] = float(np.mean(np.einsum("ij,ij->i", student, teacher)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--teacher", type=Path, required=True)
    parser.add_argument("--cache-dir", type=Path, required=True)
    parser.add_argument("--held-out", type=int, default=500)
    parser.add_argument("--cap", type=int, default=None, help="at most this many fit prompts per dataset")
    parser.add_argument("--alphas", default="0.1")
    parser.add_argument("--scopes", default="own,others,all")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    data = load(args.teacher, args.held_out, args.cap)
    base = make_embedder("static", cache_dir=args.cache_dir, progress=False)
    rows = []
    for name in DATASETS:
        held = data[name]
        row = {"dataset": name, "scope": "none", "embedder": "static", "fit_prompts": 0,
               **agreement(base.encode(held["held_texts"]), held["held_Y"], args.seed)}
        print(json.dumps(row), flush=True)
        rows.append(row)
    for alpha in (float(a) for a in args.alphas.split(",")):
        for scope in args.scopes.split(","):
            for name in DATASETS:
                fit_from = {"own": [name], "others": [d for d in DATASETS if d != name], "all": list(DATASETS)}[scope]
                texts = [t for d in fit_from for t in data[d]["fit_texts"]]
                Y = np.concatenate([data[d]["fit_Y"] for d in fit_from])
                start = time.process_time()
                student = fit_static_tuned(base, Teacher(data[name]["teacher_id"]), texts,
                                           teacher_vectors=saved_vectors(dict(zip(texts, Y, strict=True))),
                                           alpha=alpha, progress=False)
                row = {"dataset": name, "scope": scope, "alpha": alpha, "fit_prompts": len(texts),
                       "fit_cpu_s": round(time.process_time() - start, 1),
                       **agreement(student.encode(data[name]["held_texts"]), data[name]["held_Y"], args.seed)}
                print(json.dumps(row), flush=True)
                rows.append(row)
    args.out.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
