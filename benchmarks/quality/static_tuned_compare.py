"""`static-tuned` against `static` and its teacher `minilm-onnx`, paired per trial (issue 28, item 1).

Reads saved `uniroute evaluate` results (seed 0; trial t is the same split for every embedder, so runs of
different lengths pair over their common first trials): benchmarks/results/embedders/<ds>.static-tuned.json, and
`minilm-onnx` and `static` from the README's quality run (docs/results/<ds>.json) when it is on them, else from
their own files there. Per dataset and method: each embedder's mean Area over the paired trials and the two-sided
sign test of static-tuned against each (wins-losses, p; significant at 0.01). No evaluation is run here.

Run: `.venv/bin/python -m benchmarks.quality.static_tuned_compare` -> benchmarks/results/static_tuned_compare.json
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.runner import REPO, RESULTS_DIR, now_utc
from benchmarks.speed.embedding import EVALUATIONS, saved_results
from uniroute import experiments as ev

OUT = RESULTS_DIR / "static_tuned_compare.json"
METHODS = ("zero", "knn", "kmeans", "kmeans_shrunk", "learnedmap", "auto")
DATASETS = ("routerdc_model7", "mmlu_pro_cot29", "routerbench_subset")


def _load(path: Path) -> dict[str, Any] | None:
    return json.loads(path.read_text()) if path.exists() else None


def _saved(dataset: str, name: str) -> tuple[Path, dict[str, Any]] | None:
    """An embedder's saved run, looked up as the embedders page does: the README's quality run when it is on that
    embedder (the build default's), else the embedder's own file."""
    return next(((path, saved) for path, saved in saved_results(dataset, name)
                 if saved["embedder_id"].startswith(f"{name}:")), None)


def compare(dataset: str) -> dict[str, Any] | None:
    tuned = _load(EVALUATIONS / f"{dataset}.static-tuned.json")
    if tuned is None:
        return None
    out: dict[str, Any] = {"static-tuned": {"file": str((EVALUATIONS / f"{dataset}.static-tuned.json")
                                                        .relative_to(REPO)), "embedder_id": tuned["embedder_id"],
                                            "trials": tuned["trials"]}, "methods": {}}
    loaded = {}
    for name in ("minilm-onnx", "static"):
        if (found := _saved(dataset, name)) is not None:
            path, saved = found
            loaded[name] = saved
            out[name] = {"file": str(path.relative_to(REPO)), "embedder_id": saved["embedder_id"],
                         "trials": saved["trials"]}
    for m in METHODS:
        if m not in tuned["per_trial_area"]:
            continue
        a = tuned["per_trial_area"][m]
        row: dict[str, Any] = {"static-tuned": round(float(np.mean(a)), 4)}
        for name, saved in loaded.items():
            if m not in saved.get("per_trial_area", {}):
                continue
            b = saved["per_trial_area"][m]
            n = min(len(a), len(b))
            row[name] = round(float(np.mean(b[:n])), 4)
            row[f"vs_{name}"] = {**ev.sign_test(a[:n], b[:n]), "trials": n}
        out["methods"][m] = row
    return out


def main() -> None:
    result = {"at": now_utc(), "datasets": {d: c for d in DATASETS if (c := compare(d)) is not None}}
    OUT.write_text(json.dumps(result, indent=2) + "\n")
    for dataset, c in result["datasets"].items():
        for m, row in c["methods"].items():
            tests = "  ".join(f"{k[3:]}: {t['wins']}-{t['losses']} p={t['p']:.2g}" for k, t in row.items()
                              if k.startswith("vs_"))
            means = "  ".join(f"{k} {v:.4f}" for k, v in row.items() if not k.startswith("vs_"))
            print(f"{dataset:20s} {m:14s} {means}  |  {tests}")


if __name__ == "__main__":
    main()
