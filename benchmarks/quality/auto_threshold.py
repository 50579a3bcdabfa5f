"""How many standard errors another kind must beat `auto`'s default by (selection.Z), replayed on stored runs.

Every evaluation stores, per trial, the selection's validation Areas and the paired standard error of every pair
of candidates (`per_trial_selection`), and every kind's test Area (`per_trial_area`). Replaying the rule
(selection.clear_choice) with another z on those numbers gives the kind `auto` would have served and so its test
Area, trial by trial, without running anything again; at the z in code it must give the stored `auto` exactly
(checked, kind for kind, or the run is refused). Where a z would serve a kind the run did not score on test (not in
its --methods), that row has no Area: run the evaluation with every kind. At equal costs the served pool re-decides
between the kind and the quality-only rule (pool_choice), which this replay does not: such runs are refused by the
exactness check.

Run: `python -m benchmarks.quality.auto_threshold [RUN.json ...]` (default: RUNS); writes
benchmarks/results/auto_threshold.json and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.runner import RESULTS_DIR, write_result
from uniroute.selection.selection import Z, clear_choice
from uniroute.selection.statistics import sign_test

DOCS_RESULTS = Path(__file__).resolve().parents[2] / "docs" / "results"
# The README's three runs and the synthetic-topics run of results.md (where K-NN leads and the hierarchy gives ground)
RUNS = (*(DOCS_RESULTS / f"{d}.json" for d in ("routerbench_subset", "mmlu_pro_cot29", "routerdc_model7")),
        RESULTS_DIR / "hierarchy_synthetic_topics.json")
ZS = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0)


def replayed_choices(run: dict[str, Any], z: float) -> list[str]:
    """Per trial, the kind the rule with this z serves among every candidate the selection measured."""
    out = []
    for sel in run["per_trial_selection"]:
        default = sel["default"]
        out.append(clear_choice(sel["val_area"], default, {k: sel["pair_se"][k][default] for k in sel["val_area"]}, z))
    return out


def _paired(a: np.ndarray, b: np.ndarray, gap: float) -> dict[str, Any]:
    d = a - b
    return {"diff": float(d.mean()), "se": float(d.std(ddof=1) / math.sqrt(d.size)),
            "share_of_gap": float(d.mean() / gap), **sign_test(a, b)}


def replay(run: dict[str, Any], name: str) -> dict[str, Any]:
    """Every z of ZS on one stored run: mean test Area, share of the ZeroRouter-to-MLP gap, paired differences to
    the z in code and to the best kind on test, and how often each kind is served."""
    scored = {k: np.asarray(v, dtype=np.float64) for k, v in run["per_trial_area"].items()}
    stored = scored["auto"]
    trials = np.arange(stored.size)
    choices_at_z = replayed_choices(run, Z)
    if choices_at_z != [sel["kind"] for sel in run["per_trial_selection"]] or not np.array_equal(
            [scored[k][t] for t, k in zip(trials, choices_at_z, strict=True)], stored):
        raise ValueError(f"{name}: the rule at z = {Z} does not give the stored auto "
                         "(a run at equal costs, or one from another rule): not replayable")
    zero = float(scored["zero"].mean())
    gap = float(scored["mlp"].mean()) - zero
    kinds = sorted({k for sel in run["per_trial_selection"] for k in sel["val_area"] if k in scored})
    best = max(kinds, key=lambda k: scored[k].mean())
    rows = []
    for z in ZS:
        choices = replayed_choices(run, z)
        row: dict[str, Any] = {"z": z, "served": {k: choices.count(k) for k in sorted(set(choices))}}
        unscored = sorted({k for k in choices if k not in scored})
        if unscored:  # a kind the run did not score on test would be served: no Area to give (run it with them)
            rows.append({**row, "unscored": unscored})
            continue
        area = np.array([scored[k][t] for t, k in zip(trials, choices, strict=True)])
        rows.append({**row, "area": float(area.mean()), "share_of_gap": float((area.mean() - zero) / gap),
                     "vs_current": _paired(area, stored, gap), "vs_best_kind": _paired(area, scored[best], gap)})
    return {"run": name, "dataset": run.get("dataset"), "trials": int(stored.size),
            "embedder_id": run.get("embedder_id"), "gap": gap, "best_kind_on_test": best, "z_in_code": Z, "rows": rows}


def markdown(results: list[dict[str, Any]]) -> str:
    lines = ["| run | z | Area | share of the gap | − z in code (wins-losses, p) | − best kind on test | served |",
             "|---|---:|---:|---:|---|---|---|"]
    for res in results:
        for r in res["rows"]:
            served = ", ".join(f"{k} {n}" for k, n in sorted(r["served"].items(), key=lambda kv: -kv[1]))
            if "unscored" in r:
                lines.append(f"| {res['run']} | {r['z']:g} | - | - | - | not scored on test: "
                             f"{', '.join(r['unscored'])} | {served} |")
                continue
            c, b = r["vs_current"], r["vs_best_kind"]
            lines.append(f"| {res['run']} | {r['z']:g} | {r['area']:.4f} | {100 * r['share_of_gap']:.1f}% | "
                         f"{c['diff']:+.4f} ({c['wins']}-{c['losses']}, p = {c['p']:.2g}) | "
                         f"{res['best_kind_on_test']} {b['diff']:+.4f} ({b['wins']}-{b['losses']}, p = {b['p']:.2g}) | "
                         f"{served} |")
    return "\n".join(lines)


def _shown(path: Path) -> str:
    """A run's path as the result names it: relative to the repository where it is inside."""
    path = path.resolve()
    return str(path.relative_to(DOCS_RESULTS.parents[1])) if path.is_relative_to(DOCS_RESULTS.parents[1]) else str(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="*", type=Path, default=list(RUNS), help="stored `uniroute evaluate` JSONs")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "auto_threshold.json")
    args = parser.parse_args()
    results = [replay(json.loads(path.read_text()), path.stem) for path in args.runs]
    write_result({"benchmark": "auto_threshold", "runs": [_shown(p) for p in args.runs], "results": results}, args.out)
    print(markdown(results))


if __name__ == "__main__":
    main()
