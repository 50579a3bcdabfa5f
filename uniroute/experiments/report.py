"""The JSON report of an evaluation: means over trials, sign tests, chosen hyper-parameters, validation-size study."""

from __future__ import annotations

import logging
import math
from collections import Counter
from typing import Any

import numpy as np

from uniroute.experiments.methods import KIND_METHODS, METHOD_LABELS, METHODS, ORACLES, VAL_SIZE_METHODS
from uniroute.experiments.protocol import EvalConfig
from uniroute.selection.curves import CURVE_GRID
from uniroute.selection.statistics import finite_mean, sign_test

log = logging.getLogger(__name__)

def tuning_summary(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Over trials: how often each value (and strength) was chosen, how often at a grid edge or a bound, and the
    mean validation Area of every searched value (for `pairwise`: the validation battles' log-likelihood)."""
    values = [int(r["value"]) for r in records]
    searched = sorted({int(v) for r in records for v in r.get("areas", {})})
    mean_area = {str(v): finite_mean([r["areas"][str(v)] for r in records if str(v) in r.get("areas", {})])
                 for v in searched}
    out = {
        "chosen_counts": {str(k): c for k, c in sorted(Counter(values).items())},
        "median": float(np.median(values)),
        # At an edge: the largest value searched while the ladder went on (the search was capped). At a
        # bound: the ladder's first or last value (K or k = 1, or as many as there are prompts to use).
        "at_edge": float(np.mean([bool(r["at_edge"]) for r in records])),
        "at_bound": float(np.mean([bool(r["at_bound"]) for r in records])),
        "searched": searched,
        "mean_val_area_by_value": mean_area,
    }
    strengths = [float(r["shrinkage"]) for r in records]
    if any(strengths):
        out["shrinkage_counts"] = {f"{s:g}": c for s, c in sorted(Counter(strengths).items())}
    if all("prior" in r for r in records):  # pairwise: the Bradley-Terry ridge chosen with K
        out["prior_counts"] = {f"{p:g}": c for p, c in sorted(Counter(float(r["prior"]) for r in records).items())}
    return out


def selection_summary(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Over trials: how often auto chose each kind, and each candidate's mean validation Area, SE and P(best)."""
    kinds = list(records[0]["val_area"])
    return {
        "chosen_counts": dict(Counter(r["kind"] for r in records)),
        "mean_val_area": {k: float(np.mean([r["val_area"][k] for r in records])) for k in kinds},
        "mean_val_area_se": {k: float(np.mean([r["val_area_se"][k] for r in records])) for k in kinds},
        "mean_p_best": {k: float(np.mean([r["p_best"][k] for r in records])) for k in kinds},
    }


def evaluation_report(results: list[dict[str, Any]], config: EvalConfig) -> dict[str, Any]:
    """The JSON result (DESIGN.md section 5): means over trials, sign tests, chosen hyper-parameters."""
    methods = [m for m in METHODS if m in config.methods]
    n = len(results)
    summary: dict[str, Any] = {}
    for m in methods:
        rows = [r["metrics"][m] for r in results]
        area = np.array([r["area"] for r in rows])
        area50 = np.array([r["area50"] for r in rows])
        qnc = np.array([r["qnc"] for r in rows])
        peak = np.array([r["peak"] for r in rows])
        summary[m] = {
            "area": float(area.mean()),
            "area50": float(area50.mean()),
            "qnc": finite_mean(qnc),  # mean over trials where the best LLM's score is reached
            "qnc_inf_frac": float(np.mean(np.isposinf(qnc))),  # NaN (a free best LLM) is not "never"
            "peak": float(peak.mean()),
            "area_std": float(area.std(ddof=1)) if n > 1 else 0.0,
            "area50_std": float(area50.std(ddof=1)) if n > 1 else 0.0,
            "label": METHOD_LABELS[m],
            "oracle": m in ORACLES,
        }
    sign_tests = {}
    for i, a in enumerate(methods):
        for b in methods[i + 1 :]:
            sign_tests[f"{a}_vs_{b}"] = sign_test(
                [r["metrics"][a]["area"] for r in results], [r["metrics"][b]["area"] for r in results]
            )
    tuning = {m: tuning_summary([r["tuning"][m] for r in results]) for m in methods if m in (*KIND_METHODS, "pairwise")}
    auto = selection_summary([r["selection"] for r in results]) if "auto" in methods else None
    curves = {m: np.mean([r["curve"][m] for r in results], axis=0).tolist() for m in methods}
    return {
        "trials": n,
        "methods": summary,
        "sign_tests": sign_tests,
        "k": tuning,  # per kind: chosen K / k (and shrinkage), edge and bound shares, mean Area per searched value
        "grid_edges": {m: {"at_edge": t["at_edge"], "at_bound": t["at_bound"]} for m, t in tuning.items()},
        "auto": auto,
        "per_trial_area": {m: [r["metrics"][m]["area"] for r in results] for m in methods},
        # Each trial's selection record (every candidate's validation Area, its SEs, the choice): with the
        # per-trial test Areas above, what another selection rule would have served can be replayed exactly.
        "per_trial_selection": [r["selection"] for r in results] if "auto" in methods else None,
        "mean_curve": {"cost": CURVE_GRID.tolist(), **curves},
        # Every trial's test LLMs as (name, normalised test cost, test score): the plot's grey points.
        "test_llm_points": [
            [[name, c, sc] for name, c, sc in zip(r["test_models"], r["llm_points"]["cost"], r["llm_points"]["score"],
                                                 strict=True)]
            for r in results
        ],
        "n_test_prompts_mean": float(np.mean([r["n_test_prompts"] for r in results])),
        "n_val_prompts": int(results[0]["n_val_prompts"]),
        "trial_seconds_mean": float(np.mean([r["seconds"]["total"] for r in results])),
        "trial_cpu_seconds_mean": float(np.mean([r["cpu_seconds"] for r in results])),
        "method_seconds_mean": {
            k: float(np.mean([r["seconds"][k] for r in results])) for k in results[0]["seconds"] if k != "total"
        },
    }


def val_size_report(results: list[dict[str, Any]], config: EvalConfig) -> dict[str, Any]:
    """Area versus number of validation prompts: mean and 96% interval (2 standard errors) per method."""
    methods = [m for m in VAL_SIZE_METHODS if m in config.methods]
    n_val = int(results[0]["n_val_prompts"])
    sizes = sorted({s for s in config.val_sizes if s < n_val})
    skipped = sorted({s for s in config.val_sizes if s >= n_val})
    out_methods: dict[str, Any] = {m: {"mean": [], "half_width": [], "std": []} for m in methods}
    chosen: dict[str, list[dict[str, int]]] = {m: [] for m in methods}
    edges: dict[str, list[float]] = {m: [] for m in methods if m != "auto"}
    sign: dict[str, list[dict[str, Any]]] = {}
    paired: dict[str, dict[str, list[float]]] = {}
    labels = [*sizes, n_val]
    for size in labels:
        areas = {}
        for m in methods:
            if size == n_val:
                vals = np.array([r["metrics"][m]["area"] for r in results])
                ks = [r["selection"]["kind"] if m == "auto" else r["tuning"][m] for r in results]
            else:
                vals = np.array([r["valsize"][str(size)]["area"][m] for r in results])
                ks = [r["valsize"][str(size)]["chosen"][m] for r in results]
            areas[m] = vals
            sd = float(vals.std(ddof=1)) if len(vals) > 1 else 0.0
            out_methods[m]["mean"].append(float(vals.mean()))
            out_methods[m]["std"].append(sd)
            out_methods[m]["half_width"].append(2 * sd / math.sqrt(len(vals)))
            if m == "auto":
                chosen[m].append(dict(sorted(Counter(ks).items())))
            else:
                chosen[m].append({str(k): c for k, c in sorted(Counter(int(t["value"]) for t in ks).items())})
                edges[m].append(float(np.mean([bool(t["at_edge"]) for t in ks])))
        for i, a in enumerate(methods):
            for b in methods[i + 1 :]:
                sign.setdefault(f"{a}_vs_{b}", []).append(sign_test(areas[a], areas[b]))
                # The trials' LLM splits move every method's Area together; the paired difference is what
                # separates two methods, so its 96% interval is reported beside the per-method intervals.
                diff = areas[a] - areas[b]
                sd = float(diff.std(ddof=1)) if len(diff) > 1 else 0.0
                entry = paired.setdefault(f"{a}_vs_{b}", {"mean": [], "half_width": []})
                entry["mean"].append(float(diff.mean()))
                entry["half_width"].append(2 * sd / math.sqrt(len(diff)))
    selections = {str(size): [r["valsize"][str(size)].get("selection") for r in results] for size in sizes}
    return {
        "trials": len(results),
        "sizes": labels,
        "skipped_sizes": skipped,
        "n_val_all": n_val,
        "methods": out_methods,
        "chosen": chosen,
        "at_edge": edges,  # per size: share of trials whose chosen K or k is at an edge of its searched grid
        "sign_tests": sign,
        "paired_area_difference": paired,
        "per_trial_area": {str(size): {m: [r["valsize"][str(size)]["area"][m] for r in results] for m in methods}
                           for size in sizes},
        "per_trial_selection": selections if "auto" in methods else None,  # per size, as the report's
        "interval": "mean +/- 2 standard errors over trials (96%)",
    }
