"""The `static-tuned` ridge runs (benchmarks/results/static_tuned_ridge/, benchmarks/quality/static_tuned_routing.py)
read as the build-embedder rule reads the embedders page: a Markdown table for docs/decisions/0010-build-embedder-
share-of-gap.md, printed, never hand-copied.

Per run: its share of the ZeroRouter-to-MLP gap below the page's best embedder of the dataset (`paired_share` over
the stored per-trial `auto` Areas, the gap the page uses), ± standard error, wins-losses; below `minilm-onnx` (the
README's quality run); and, for a run fitted on more or other text than the routed dataset's own, against the
scope-`own` run at the same ridge strength and trial count (negative: above it).

Run: `python -m tools.pages.static_tuned_ridge_table [FILE ...]` (default: every run in the folder).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.runner import REPO, RESULTS_DIR
from tools.pages.embedder_share_rule import SERVED, paired_share, result_figures, zero_to_mlp_gap
from uniroute.settings import DEFAULT_BUILD_EMBEDDER

RUNS = RESULTS_DIR / "static_tuned_ridge"


def _versus(mine: list[float], other: list[float], gap: list[float]) -> dict[str, Any]:
    """`mine` below `other` as a share of the gap, paired over their common trials, with wins-losses."""
    share = paired_share(mine, other, gap)
    a, b = np.asarray(mine[: share["trials"]]), np.asarray(other[: share["trials"]])
    return {**share, "wins": int(np.sum(a > b)), "losses": int(np.sum(a < b))}


def _page_runs(dataset: str) -> tuple[str, dict[str, dict[str, list[float]]]]:
    """(the page's best embedder of the served router, per embedder its stored per-trial Areas) on a dataset."""
    block = result_figures(json.loads((RESULTS_DIR / "embedding.json").read_text()), "routing")[dataset]
    areas = {name: json.loads((REPO / row["file"]).read_text())["per_trial_area"]
             for name, row in block["embedders"].items() if row is not None}
    return block["vs_best"][SERVED]["best"], areas


def measures(path: Path) -> dict[str, Any]:
    """One run against the page's best, the build default, and the scope-`own` run of the same ridge and trials."""
    run: dict[str, Any] = json.loads(path.read_text())
    best, areas = _page_runs(run["dataset"])
    gap = zero_to_mlp_gap(areas, best)
    assert gap is not None, f"no ZeroRouter-to-MLP gap for {run['dataset']}"
    mine = run["per_trial_area"][SERVED]
    own = path.with_name(path.name.replace(f".{run['scope']}.", ".own.", 1))
    return {"run": run, "best": best, "best_auto": float(np.mean(areas[best][SERVED][: len(mine)])),
            "vs_best": _versus(mine, areas[best][SERVED], gap[1]),
            "vs_default": _versus(mine, areas[DEFAULT_BUILD_EMBEDDER][SERVED], gap[1]),
            "vs_own": None if run["scope"] == "own" or not own.exists() else
            _versus(mine, json.loads(own.read_text())["per_trial_area"][SERVED], gap[1])}


def _cell(versus: dict[str, Any] | None) -> str:
    return "" if versus is None else (f"{versus['share']:.1%} ± {versus['se']:.1%} "
                                      f"({versus['wins']}-{versus['losses']})")


def row(path: Path) -> str:
    m = measures(path)
    run = m["run"]
    return (f"| {run['dataset']} | {run['scope']} | {run['alpha']} | {run['fit_prompts']:,} | {run['trials']} | "
            f"{run['load_average_before'][0]} / {run['load_average_after'][0]} | "
            f"{np.mean(run['per_trial_area'][SERVED]):.5f} | `{m['best']}` ({m['best_auto']:.5f}) | "
            f"{_cell(m['vs_best'])} | {_cell(m['vs_default'])} | {_cell(m['vs_own'])} |")


def table(paths: list[Path]) -> list[str]:
    return ["| dataset | scope | ridge | prompts fitted | trials | load (before / after) | `auto` | best (`auto`) | "
            "below the best | below `minilm-onnx` | below scope `own`, same ridge |",
            "|---|---|---:|---:|---:|---|---:|---|---:|---:|---:|", *(row(p) for p in paths)]


if __name__ == "__main__":
    print("\n".join(table([Path(a) for a in sys.argv[1:]] or sorted(RUNS.glob("*.json")))))
