"""The served router (`auto`) on a `static-tuned` table fitted at a chosen ridge strength, paired with stored runs.

The build-embedder rule (docs/decisions/0010-build-embedder-share-of-gap.md) needs `static-tuned` at 100 paired
trials in the variant a build would serve. This fits the table on teacher (`minilm-onnx`) vectors saved per text
(`--teacher`: one .npz per dataset with `texts` and `vectors`, as static_tuned_teacher.py writes them; a text not
saved there, where that run was stopped early, is embedded by the teacher here), embeds every prompt of the routed
dataset with it and runs `uniroute evaluate`'s trials (methods zero and auto; trial t is the split of the stored
100-trial runs, which the ZeroRouter Areas check per trial). Scopes: `own` fits on every prompt text of the routed
dataset, exactly the texts `uniroute evaluate --embedder static-tuned` fits on (operations.evaluation.
prompt_embeddings); `others` on every prompt text of the other two datasets (every routed prompt new to the table);
`all` on every prompt text of all three, each text once, in text order: what a build fits on a store that has seen
them all (docs/decisions/0009-static-tuned-fits-every-seen-prompt.md).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from benchmarks.quality.static_tuned_teacher import DATASETS, dataset_texts
from benchmarks.runner import REPO, load_average, now_utc
from uniroute import experiments as ev
from uniroute.embed import make_embedder
from uniroute.embed.static_tuned import fit_static_tuned


def saved_teacher(folder: Path, names: list[str]) -> dict[str, np.ndarray]:
    """text -> saved teacher vector, over the datasets named."""
    lookup: dict[str, np.ndarray] = {}
    for name in names:
        with np.load(folder / f"{name}.npz") as saved:
            lookup.update(zip(saved["texts"].tolist(), saved["vectors"].astype(np.float64), strict=True))
    return lookup


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--teacher", type=Path, required=True)
    parser.add_argument("--cache-dir", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "datasets")
    parser.add_argument("--dataset", required=True, choices=tuple(DATASETS))
    parser.add_argument("--scope", default="own", choices=("own", "others", "all"))
    parser.add_argument("--alpha", type=float, default=0.1)
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    load_before, started = load_average(), now_utc()
    data = ev.eval_data_from_frame(ev.long_frame(args.data / args.dataset))
    texts = ev.prompt_texts(data.prompts, DATASETS[args.dataset])
    start = time.process_time()
    if args.scope == "own":
        lookup, fit_texts = saved_teacher(args.teacher, [args.dataset]), list(texts)
    else:  # every text of each dataset named, not only the saved prefix: a build has seen them all
        names = [d for d in DATASETS if d != args.dataset] if args.scope == "others" else list(DATASETS)
        lookup = saved_teacher(args.teacher, names)
        fit_texts = sorted({text for name in names for text in dataset_texts(args.data, name)[1]})
    teacher = make_embedder("minilm-onnx", cache_dir=args.cache_dir, progress=False)
    missing = sorted({t for t in fit_texts if t not in lookup})
    if missing:  # the saved run stopped early on some dataset: the teacher embeds the rest, as a build would
        lookup.update(zip(missing, np.asarray(teacher.encode(missing), dtype=np.float64), strict=True))
    base = make_embedder("static", cache_dir=args.cache_dir, progress=False)
    model = fit_static_tuned(base, teacher, fit_texts, alpha=args.alpha, progress=False,
                             teacher_vectors=lambda _teacher, some: np.stack([lookup[t] for t in some]))
    X = np.ascontiguousarray(model.encode(texts), dtype=np.float32)
    fit_s = time.process_time() - start
    report, _, _ = ev.evaluate(data, X, args.trials, ev.EvalConfig(seed=args.seed, methods=("zero", "auto")),
                               workers=0)
    mine = np.asarray(report["per_trial_area"]["auto"])
    stored = json.loads((REPO / "docs" / "results" / f"{args.dataset}.json").read_text())["per_trial_area"]
    n = len(mine)
    onnx_auto = np.asarray(stored["auto"][:n])
    gap = np.asarray(stored["mlp"][:n]) - np.asarray(stored["zero"][:n])
    row = {"dataset": args.dataset, "scope": args.scope, "alpha": args.alpha, "fit_prompts": len(fit_texts),
           "teacher_embedded_here": len(missing), "trials": n, "seed": args.seed,
           "embedder_id": str(model.embedder_id), "teacher_id": str(teacher.embedder_id),
           "fit_and_embed_cpu_s": round(fit_s, 1), "trial_cpu_seconds_mean": report.get("trial_cpu_seconds_mean"),
           "started": started, "load_average_before": load_before, "load_average_after": load_average(),
           "zero_matches_stored": bool(np.allclose(report["per_trial_area"]["zero"], stored["zero"][:n])),
           "auto": float(mine.mean()), "minilm_onnx_auto": float(onnx_auto.mean()),
           "share_of_gap_below_minilm_onnx": float((onnx_auto - mine).mean() / gap.mean()),
           "wins_losses_vs_minilm_onnx": [int(np.sum(mine > onnx_auto)), int(np.sum(mine < onnx_auto))],
           "per_trial_area": {"zero": report["per_trial_area"]["zero"], "auto": mine.tolist()}}
    print(json.dumps({k: v for k, v in row.items() if k != "per_trial_area"}), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(row, indent=1) + "\n")


if __name__ == "__main__":
    main()
