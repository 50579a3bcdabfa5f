"""Quality-only evaluation, for logs without costs: each method's mean test score at lambda = 0.

Without costs there is no cost axis and no Area. The protocol still runs unchanged on the same data with a
unit cost for every result: all models then cost the same, so every lambda routes like lambda = 0 (each
prompt to the model of least estimated loss), a method's deferral curve is the single point (1, score), and
its Area, Peak and the tuning criterion all equal that score. The report then gives each method's mean score
next to the best single test LLM (the one best on the test prompts: an upper reference no router can pick
without test labels) and the oracle (every test prompt answered by a test LLM that got it right), with the
paired sign tests on per-trial score.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from uniroute.experiments.logs import eval_data_from_frame
from uniroute.experiments.markdown import sign_test_table
from uniroute.experiments.methods import METHOD_LABELS, ORACLES, QUALITY_KINDS, QUALITY_RULES
from uniroute.experiments.plots import wrapped_title
from uniroute.experiments.protocol import trial_split
from uniroute.routers.cluster.kmeans_kind import KMEANS
from uniroute.routers.quality_rule.kind import rule_k
from uniroute.routers.quality_rule.switches import fit_quality_rule, rule_gamma
from uniroute.selection.curves import Curve
from uniroute.selection.data import EvalData, RoutingData
from uniroute.selection.scored_pool import LabelledPool
from uniroute.selection.statistics import sign_test

log = logging.getLogger(__name__)

MIN_COSTED_MODELS = 2


def has_costs(frame: pd.DataFrame) -> bool:
    """Whether at least two models of a long frame have a cost somewhere (else: quality-only evaluation)."""
    costed = frame.loc[pd.to_numeric(frame["cost"], errors="coerce").notna(), "model"]
    return costed.nunique() >= MIN_COSTED_MODELS


def unit_cost_data(frame: pd.DataFrame) -> EvalData:
    """The long frame's matrices with every model kept and a unit cost on every result (quality-only)."""
    return eval_data_from_frame(frame.assign(cost=1.0))


def oracle_scores(data: RoutingData, prompts: np.ndarray, models: np.ndarray) -> float:
    """Mean over prompts of the best score any of `models` got there."""
    return float(np.nanmax(data.scores[np.ix_(prompts, models)], axis=1).mean())


def quality_report(report: dict[str, Any], results: list[dict[str, Any]], oracles: list[float]) -> dict[str, Any]:
    """The evaluation report recast for quality-only routing (see the module docstring); oracles per trial."""
    methods = list(report["methods"])
    best = np.array([max(r["llm_points"]["score"]) for r in results])
    out = {key: value for key, value in report.items() if key not in ("methods", "mean_curve", "per_trial_area")}
    out["quality_only"] = True
    out["methods"] = {}
    for m in methods:
        scores = np.array([r["metrics"][m]["peak"] for r in results])
        out["methods"][m] = {
            "score": float(scores.mean()),
            "score_std": float(scores.std(ddof=1)) if len(scores) > 1 else 0.0,
            "label": METHOD_LABELS[m],
            "oracle": m in ORACLES,
        }
    out["per_trial_score"] = {m: [r["metrics"][m]["peak"] for r in results] for m in methods}
    rules = [m for m in methods if m in (*QUALITY_KINDS, *QUALITY_RULES)]
    out["quality_rules"] = {m: {
        "k_mean": float(np.mean([r["tuning"][m]["value"] for r in results])),
        "switched_clusters_mean": float(np.mean([r["tuning"][m]["switched"] for r in results])),
        "switched_test_share_mean": float(np.mean([r["tuning"][m]["switched_test_share"] for r in results])),
        "per_trial": [r["tuning"][m] for r in results]} for m in rules}
    out["best_single_llm"] = {"score": float(best.mean()), "per_trial": best.tolist()}
    out["oracle"] = {"score": float(np.mean(oracles)), "per_trial": list(oracles)}
    out["sign_tests_vs_best_single_llm"] = {m: sign_test(out["per_trial_score"][m], best.tolist()) for m in methods}
    # With unit costs the Area of a method's single-point curve is its score: the sign tests are on scores.
    out["sign_tests"] = report["sign_tests"]
    return out


def quality_table(report: dict[str, Any], alpha: float = 0.01) -> str:
    """Markdown table of a quality-only report: mean test score at lambda = 0, best single LLM, oracle."""
    lines = ["| method | mean test score (lambda = 0) | vs best single LLM (wins/losses, p) |", "|---|---:|---|"]
    for m, s in report["methods"].items():
        t = report["sign_tests_vs_best_single_llm"][m]
        mark = " *" if t["p"] < alpha else ""
        lines.append(f"| {s['label']} | {s['score']:.4f} | {t['wins']}/{t['losses']}, p = {t['p']:.2g}{mark} |")
    lines.append(f"| best single test LLM (chosen on test labels) | {report['best_single_llm']['score']:.4f} | |")
    lines.append(f"| oracle (a test LLM that got it right) | {report['oracle']['score']:.4f} | |")
    return "\n".join(lines)


def quality_markdown(report: dict[str, Any], alpha: float = 0.01) -> str:
    """A quality-only report as Markdown: the score table, what it means, and the paired sign tests."""

    note = (f"No costs in the test data: quality-only routing, mean test score at lambda = 0 over "
            f"{report['trials']} trials; `*`: differs from the best single test LLM (paired sign test, alpha = "
            f"{alpha}). The sign tests below compare the methods' per-trial scores.")
    return "\n\n".join([quality_table(report, alpha), note, sign_test_table(report, alpha=alpha)])


def write_quality_plot(report: dict[str, Any], path: Path, title: str) -> None:
    """Mean test score per method (bars), with the best single test LLM and the oracle as lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [s["label"] for s in report["methods"].values()]
    scores = [s["score"] for s in report["methods"].values()]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ax.barh(labels, scores, color="tab:blue", alpha=0.8)
    ax.axvline(report["best_single_llm"]["score"], color="grey", ls="--", label="best single test LLM")
    ax.axvline(report["oracle"]["score"], color="black", ls=":", label="oracle")
    low = min([*scores, report["best_single_llm"]["score"]])
    ax.set_xlim(max(0.0, low - 0.05), min(1.0, report["oracle"]["score"] + 0.03))
    ax.set_xlabel("mean test score at lambda = 0 (quality-only routing)")
    ax.set_title(wrapped_title(title), fontsize=10)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def protocol_oracles(data: RoutingData, config: Any, results: list[dict[str, Any]]) -> list[float]:
    """The oracle's test score of each trial of the dynamic-pool protocol (its split redrawn from the seed)."""

    out = []
    for r in results:
        split = trial_split(data, config.seed, r["trial"], config.train_frac, config.val_frac)
        out.append(oracle_scores(data, split.test, split.test_models))
    return out


def quality_rule_curve(state: Any, n_val: int, pool: LabelledPool,
                       bonferroni: bool = True) -> tuple[dict[str, Any], Curve]:
    """The quality-only rule on K-means clusters of the training prompts: (what it chose, its test curve).

    The test LLMs' validation losses are the onboarding labels every admissible method gets; the overall best
    is chosen on them, never on the test labels."""
    k = rule_k(n_val, state.tuned(KMEANS.name, n_val).value, len(state.split.train))
    rule = fit_quality_rule(state.fits.val_cluster(k)[:n_val], state.test_llm_val_losses(n_val), k,
                            bonferroni=bonferroni)
    test_clusters = state.fits.centroids(k).assign(state.X_test)
    record = {"value": int(k), "best": state.test_llm_names()[rule.best], "switched": int(rule.switched.sum()),
              "switched_test_share": float(rule.switched[test_clusters].mean())}
    return record, pool.curve(rule_gamma(rule, test_clusters, pool.scores.shape[1]), state.config.n_lambdas)
