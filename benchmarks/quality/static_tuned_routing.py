"""Pilot: the served router (`auto`) on a static-tuned table fitted on other text, paired with stored runs.

Fits the table on the teacher vectors static_tuned_teacher.py saved (scope `others`: the other two datasets'
prompts, so every routed prompt is new to the table; `all`: every saved prompt of the three), embeds every prompt
of the routed dataset with it (static's speed, no teacher) and runs `uniroute evaluate`'s trials (seed and trial t
are the same split as the stored 100-trial runs). Compared per trial with the stored `minilm-onnx` run
(docs/results/<dataset>.json) and its ZeroRouter-to-MLP gap.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from benchmarks.quality.static_tuned_teacher import DATASETS as PARTS
from benchmarks.quality.static_tuned_transfer import DATASETS, Teacher, saved_vectors
from uniroute import experiments as ev
from uniroute.embed import make_embedder
from uniroute.embed.static_tuned import fit_static_tuned


def sign_counts(a: np.ndarray, b: np.ndarray) -> tuple[int, int]:
    return int(np.sum(a > b + 1e-12)), int(np.sum(a < b - 1e-12))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--teacher", type=Path, required=True)
    parser.add_argument("--cache-dir", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=Path("../shared/datasets"))
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--scope", default="others", choices=("others", "all", "static"))
    parser.add_argument("--alpha", type=float, default=0.1)
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    base = make_embedder("static", cache_dir=args.cache_dir, progress=False)
    fit_from = [d for d in DATASETS if d != args.dataset] if args.scope == "others" else list(DATASETS)
    frame = ev.long_frame(args.data / args.dataset)
    data = ev.eval_data_from_frame(frame)
    texts = ev.prompt_texts(data.prompts, PARTS[args.dataset])
    start = time.process_time()
    if args.scope == "static":
        model, fit_prompts = base, 0
    else:
        fit_texts, Ys, teacher_id = [], [], ""
        for name in fit_from:
            with np.load(args.teacher / f"{name}.npz") as saved:
                fit_texts += list(saved["texts"])
                Ys.append(saved["vectors"].astype(np.float64))
                teacher_id = str(saved["teacher_id"])
        model = fit_static_tuned(base, Teacher(teacher_id), fit_texts, alpha=args.alpha, progress=False,
                                 teacher_vectors=saved_vectors(dict(zip(fit_texts, np.concatenate(Ys), strict=True))))
        fit_prompts = len(fit_texts)
    X = np.ascontiguousarray(model.encode(texts), dtype=np.float32)
    fit_s = time.process_time() - start
    config = ev.EvalConfig(seed=args.seed, methods=("zero", "auto"))
    report, _, _ = ev.evaluate(data, X, args.trials, config, workers=0)
    mine = np.asarray(report["per_trial_area"]["auto"])
    stored = json.loads(Path(f"docs/results/{args.dataset}.json").read_text())["per_trial_area"]
    n = len(mine)
    teacher_auto = np.asarray(stored["auto"][:n])
    gap = np.asarray(stored["mlp"][:n]) - np.asarray(stored["zero"][:n])
    wins, losses = sign_counts(mine, teacher_auto)
    row = {"dataset": args.dataset, "scope": args.scope, "alpha": args.alpha, "fit_prompts": fit_prompts,
           "trials": n, "seed": args.seed, "embedder_id": str(model.embedder_id),
           "fit_and_embed_cpu_s": round(fit_s, 1),
           "zero_matches_stored": bool(np.allclose(report["per_trial_area"]["zero"], stored["zero"][:n])),
           "auto": float(mine.mean()), "teacher_auto": float(teacher_auto.mean()),
           "share_of_gap_below_teacher": float((teacher_auto - mine).mean() / gap.mean()),
           "wins_losses_vs_teacher": [wins, losses], "per_trial_auto": mine.tolist()}
    print(json.dumps({k: v for k, v in row.items() if k != "per_trial_auto"}), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(row, indent=1))


if __name__ == "__main__":
    main()
