"""Which default routing setting saves: the old rule (the cheapest budget within 0.01 of the best expected score)
against rules that keep a share of the gain from the cheapest model's expected score to the best, on the shared
datasets.

Per dataset, one trial of the evaluation protocol (experiments.protocol.trial_split: 60% train, 10% validation,
30% test) with the `static` embedder: `auto` (selection) chooses and tunes a kind with the training LLMs on the
validation prompts, and its served router is built over every LLM of the dataset from their validation answers,
as a build serves its pool. For each rule, the default budget it picks from the router's published tables
(routers.tables), its expected (validation) score and cost, and the test prompts routed at its lambda: realised
score, realised cost (a fraction of the priciest model's mean cost) and how many models take traffic; `--lambda
0` the same way. One trial per dataset: a quick reading, not a paired 100-trial study.

Run: `nice -n 10 .venv/bin/python -m benchmarks.quality.default_setting [--cache-dir DIR]`; writes
benchmarks/results/default_setting.json.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from benchmarks.runner import RESULTS_DIR, SHARED, load_average, machine_info, write_result
from uniroute.embed import make_embedder
from uniroute.experiments.logs import eval_data_from_frame, long_frame
from uniroute.experiments.protocol import EvalConfig, trial_split
from uniroute.routers.rule import RoutingRule
from uniroute.routers.tables import cheapest_setting_score, default_budget, routing_tables
from uniroute.selection.selection import served_router
from uniroute.selection.split import mean_costs
from uniroute.selection.state import TrialState
from uniroute.settings import Settings

DATASETS = ("routerbench_subset", "routerdc_model7", "mmlu_pro_cot29")
# Each rule: the largest loss of expected score it accepts below the best (from the best and the cheapest setting's
# expected score), and the published rows it picks from: the budget grid only (the old rule), or every row (the
# budget and lambda grids); the cheapest qualifying row wins (old rule: the smallest budget).
RULES = {
    "old: within 0.01, budget grid": (lambda best, floor: 0.01, "budget"),
    "keep 90% of the gain, budget grid": (lambda best, floor: 0.10 * (best - floor), "budget"),
    "keep 95% of the gain": (lambda best, floor: 0.05 * (best - floor), "all"),
    "new: keep 90% of the gain": (lambda best, floor: 0.10 * (best - floor), "all"),
    "keep 80% of the gain": (lambda best, floor: 0.20 * (best - floor), "all"),
    "within 0.01": (lambda best, floor: 0.01, "all"),
    "within 0.01 or keep 90%": (lambda best, floor: max(0.01, 0.10 * (best - floor)), "all"),
}
NEW_RULE = "new: keep 90% of the gain"


def served(path: Path, cache_dir: Path, seed: int) -> tuple[RoutingRule, np.ndarray, Any, Any, str]:
    """The trial's served `auto` router over every LLM, the test prompts' vectors, the data, the split, the kind."""
    return served_on(eval_data_from_frame(long_frame(path)), cache_dir, seed)


def served_on(data: Any, cache_dir: Path, seed: int) -> tuple[RoutingRule, np.ndarray, Any, Any, str]:
    """served() on routing data already read (a study that needs more of the file than the routing data)."""
    routing = data.routing
    embedder = make_embedder("static", cache_dir=cache_dir, progress=False)
    X = np.asarray(embedder.encode(list(data.prompts)), dtype=np.float32)
    config = EvalConfig(seed=seed)
    split = trial_split(routing, config.seed, 0, config.train_frac, config.val_frac)
    state = TrialState(X, routing, split, config)
    n_val = len(split.val)
    kind = state.selection(n_val).chosen
    tuned = state.tuned(kind, n_val)
    models = [str(m) for m in routing.models]
    router = served_router(state.fits, tuned, embedder.embedder_id, models, state.losses[split.val],
                           mean_costs(routing.costs[split.val]), [str(i) for i in split.val])
    return router, X, routing, split, f"{kind} {tuned.value}"


def reading(router: RoutingRule, row: pd.Series, X_test: np.ndarray, scores: np.ndarray, costs: np.ndarray,
            priciest: float) -> dict[str, Any]:
    """One setting's published expectation and what the test prompts get at its lambda."""
    chosen = router.route(X_test, float(row["lam"]))
    rows = np.arange(len(chosen))
    share = np.bincount(chosen, minlength=len(router.models)) / len(chosen)
    return {"grid": str(row["grid"]), "budget": None if pd.isna(row["budget"]) else float(row["budget"]),
            "lam": float(row["lam"]), "expected_score": float(row["expected_score"]),
            "expected_cost": float(row["expected_cost"]), "test_score": float(np.nanmean(scores[rows, chosen])),
            "test_cost": float(np.nanmean(costs[rows, chosen])) / priciest,
            "models_taking_traffic": int((share > 0).sum()), "top_model_share": float(share.max())}


def measure(name: str, cache_dir: Path, seed: int) -> dict[str, Any]:
    """Every rule's default and lambda 0 on one dataset."""
    router, X, routing, split, kind = served(SHARED / name / "long.parquet", cache_dir, seed)
    pool = tuple(router.models)
    budgets = routing_tables(router, pool).budgets
    best, floor = float(budgets["expected_score"].max()), cheapest_setting_score(router, pool)
    test = split.test
    args = (X[test], routing.scores[test], routing.costs[test], float(router.costs.max()))
    out: dict[str, Any] = {"dataset": name, "served": kind, "models": len(pool), "best_expected": best,
                           "cheapest_expected": floor, "settings": {}}
    settings = out["settings"]
    settings["lambda 0"] = reading(router, budgets[(budgets.grid == "lambda") & (budgets.lam == 0.0)].iloc[0], *args)
    for rule, (allowed, grids) in RULES.items():
        rows = budgets[budgets.grid == "budget"] if grids == "budget" else budgets
        kept = rows[rows.expected_score >= best - allowed(best, floor) - 1e-12]
        by = ["budget"] if grids == "budget" else ["expected_cost"]
        settings[rule] = reading(router, kept.sort_values(by, kind="stable").iloc[0], *args)
    # The product's rule (routers.tables.default_budget) picks the same row as its line here.
    _, lam, expected, _ = default_budget(router, pool)
    assert (lam, expected) == (settings[NEW_RULE]["lam"], settings[NEW_RULE]["expected_score"]), (lam, expected)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache-dir", type=Path, default=None, help="embedder model files (default: the home's)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    cache_dir = args.cache_dir or Settings().cache_dir
    started, load_before, t0 = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), load_average(), time.perf_counter()
    results = []
    for name in DATASETS:
        results.append(measure(name, cache_dir, args.seed))
        r = results[-1]
        print(f"{name} ({r['served']}, {r['models']} models; cheapest {r['cheapest_expected']:.4f}, best "
              f"{r['best_expected']:.4f})", flush=True)
        for setting, s in r["settings"].items():
            value = s["budget"] if s["grid"] == "budget" else s["lam"]
            print(f"  {setting:34s} {s['grid']} {value:.4g}  expected score {s['expected_score']:.4f} cost "
                  f"{s['expected_cost']:.3f} | test score {s['test_score']:.4f} cost {s['test_cost']:.3f}, "
                  f"{s['models_taking_traffic']} models (top {s['top_model_share']:.0%})", flush=True)
    result = {"benchmark": "quality.default_setting", "embedder": "static", "trials": 1, "seed": args.seed,
              "results": results, "command": "nice -n 10 .venv/bin/python -m benchmarks.quality.default_setting",
              "started": started, "seconds": round(time.perf_counter() - t0, 1), "load_average_before": load_before,
              "load_average_after": load_average(), "machine": machine_info()}
    print(f"wrote {write_result(result, RESULTS_DIR / 'default_setting.json')}")


if __name__ == "__main__":
    main()
