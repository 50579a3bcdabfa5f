"""The onboarding-set study: the validation-size study again, with the first N validation prompts chosen by a
strategy of `selection/onboarding_order.py` instead of at random, on the same trials, against random.

The choice sees what the build would see when a new LLM arrives: the training LLMs' losses (on the training and
validation prompts), the prompts' embeddings, and a reference clustering (K-means with the K that the kmeans kind
tunes on the full validation set, training LLMs only). It never reads a test LLM's answers, and the rest of the
trial is the validation-size study's: tuning, selection and the test LLMs' Psi from val[:N].
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from uniroute.experiments.adaptive_study import adaptive_study
from uniroute.experiments.methods import METHOD_LABELS, VAL_SIZE_METHODS
from uniroute.selection.curves import curve_area
from uniroute.selection.onboarding_order import PoolView, onboarding_order
from uniroute.selection.split import TrialSplit
from uniroute.selection.state import TrialState
from uniroute.selection.statistics import sign_test

REFERENCE_KIND = "kmeans"  # whose tuned K gives the reference clusters of the choice


def selected_split(state: TrialState, strategy: str, size: int) -> TrialSplit:
    """The trial's split with its first `size` validation prompts in the strategy's order (the rest after them, in
    the trial's own random order), chosen from the training LLMs' information only."""
    split = state.split
    n_val = len(split.val)
    k = int(state.tuned(REFERENCE_KIND, n_val).value)
    centroids = state.centroids(k)
    view = PoolView.of(centroids.assign(state.X_train), state.train_losses, k)
    pool_val_losses = state.losses[np.ix_(split.val, split.train_models)]
    first = onboarding_order(strategy, centroids.assign(state.X_val), view, size, X=state.X_val,
                             pool_losses=pool_val_losses, seed=split.fit_seed)
    rest = np.setdiff1d(np.arange(n_val), first, assume_unique=True)  # sorted: the trial's random order kept
    return replace(split, val=split.val[np.concatenate([first, rest])])


def selection_study(state: TrialState, config: Any, methods: list[str]) -> dict[str, dict[str, dict[str, float]]]:
    """{strategy: {size: {method: test Area}}} with the test LLMs onboarded on the strategy's first N prompts."""
    n_val = len(state.split.val)
    sizes = [s for s in config.val_sizes if s < n_val]
    out: dict[str, dict[str, dict[str, float]]] = {}
    for strategy in config.val_selections:
        if strategy == "random" or not sizes:
            continue
        if strategy in ("adaptive", "adaptive_shared"):  # prompts chosen per test LLM or per round: its own study
            out[strategy] = adaptive_study(state, sizes, methods, shared=strategy == "adaptive_shared")
            continue
        chosen = TrialState(state.X, state.data, selected_split(state, strategy, max(sizes)), config)
        out[strategy] = {}
        for size in sizes:
            pool = chosen.test_pool(size)
            out[strategy][str(size)] = {}
            for method in methods:
                kind = chosen.selection(size).chosen if method == "auto" else method
                curve = chosen.kind_curve(chosen.tuned(kind, size), size, pool)
                out[strategy][str(size)][method] = curve_area(curve)
    return out


def study_methods(config: Any) -> list[str]:
    """The methods the study measures: the validation-size study's that the evaluation runs."""
    return [m for m in VAL_SIZE_METHODS if m in config.methods]


def selection_report(results: list[dict[str, Any]], config: Any) -> dict[str, Any] | None:
    """Per strategy, size and method: mean Area, random's on the same trials, the paired difference with its 96%
    interval, the sign test against random, and the share of the gap from random at N to all prompts closed."""
    strategies = [s for s in config.val_selections if s != "random"]
    if not strategies or not results[0].get("valsize_selection"):
        return None
    methods = study_methods(config)
    sizes = sorted(int(s) for s in results[0]["valsize_selection"][strategies[0]])
    out: dict[str, Any] = {"trials": len(results), "sizes": sizes, "strategies": {}}
    for strategy in strategies:
        rows = {}
        for method in methods:
            full = np.array([r["metrics"][method]["area"] for r in results])
            entries = []
            for size in sizes:
                chosen = np.array([r["valsize_selection"][strategy][str(size)][method] for r in results])
                rand = np.array([r["valsize"][str(size)]["area"][method] for r in results])
                diff = chosen - rand
                sd = float(diff.std(ddof=1)) if len(diff) > 1 else 0.0
                gap = float(full.mean() - rand.mean())
                entries.append({
                    "size": size, "area": float(chosen.mean()), "random_area": float(rand.mean()),
                    "all_prompts_area": float(full.mean()), "difference": float(diff.mean()),
                    "half_width": 2 * sd / math.sqrt(len(diff)), "sign_test": sign_test(chosen, rand),
                    "gap_closed": float(diff.mean() / gap) if gap > 1e-9 else None,
                })
            rows[method] = entries
        out["strategies"][strategy] = rows
    return out


def selection_table(report: dict[str, Any], alpha: float = 0.05) -> str:
    """Markdown: per strategy and method, the Area difference from random at each size, the sign test and the
    share of the random-to-all-prompts gap closed."""
    sizes = report["sizes"]
    lines = ["| strategy | method | " + " | ".join(f"N = {s}" for s in sizes) + " |",
             "|---|---|" + "---:|" * len(sizes)]
    for strategy, rows in report["strategies"].items():
        for method, entries in rows.items():
            cells = []
            for e in entries:
                t = e["sign_test"]
                star = " *" if t["p"] < alpha else ""
                closed = "" if e["gap_closed"] is None else f", {100 * e['gap_closed']:.0f}% of gap"
                cells.append(f"{e['difference']:+.4f} ± {e['half_width']:.4f} ({t['wins']}/{t['losses']}{star}"
                             f"{closed})")
            lines.append(f"| {strategy} | {METHOD_LABELS[method]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
