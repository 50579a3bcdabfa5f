"""An evaluation report as Markdown tables a README can quote."""

from __future__ import annotations

import logging
from typing import Any

from uniroute.evaluation.methods import METHOD_LABELS

log = logging.getLogger(__name__)

def _significantly_lower(report: dict[str, Any], a: str, b: str, alpha: float) -> bool:
    """Whether method a's per-trial Area is significantly below b's (paired sign test at level alpha)."""
    key = f"{a}_vs_{b}" if f"{a}_vs_{b}" in report["sign_tests"] else f"{b}_vs_{a}"
    t = report["sign_tests"][key]
    wins_a, losses_a = (t["wins"], t["losses"]) if key.startswith(f"{a}_vs_") else (t["losses"], t["wins"])
    return losses_a > wins_a and t["p"] < alpha


# Marks after an Area in the summary table: significantly below that reference method's Area.
AREA_MARKS = {"learnedmap": "*", "kmeans": "†"}


def summary_table(
    report: dict[str, Any], marks: dict[str, str] | None = None, alpha: float = 0.01
) -> str:
    """Markdown table of the report; a mark after the Area says it is significantly below that reference's.

    Default marks: `*` below UniRoute (LearnedMap) (as in the paper's table), `†` below UniRoute (K-means).
    """
    marks = AREA_MARKS if marks is None else marks
    marks = {ref: sym for ref, sym in marks.items() if ref in report["methods"]}
    lines = [
        "| method | Area | Area50 | QNC | QNC = inf | Peak |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for m, s in report["methods"].items():
        mark = "".join(sym for ref, sym in marks.items() if ref != m and _significantly_lower(report, m, ref, alpha))
        qnc = "—" if s["qnc"] is None else f"{100 * s['qnc']:.1f}%"
        lines.append(
            f"| {s['label']} | {s['area']:.4f}{mark} | {s['area50']:.4f} | {qnc} | "
            f"{100 * s['qnc_inf_frac']:.0f}% | {s['peak']:.4f} |"
        )
    return "\n".join(lines)


def sign_test_table(report: dict[str, Any], alpha: float = 0.01) -> str:
    """Markdown table of every paired sign test on per-trial Area (wins of A, losses of A, p)."""
    lines = ["| A vs B | A wins | A loses | p | significant at 0.01 |", "|---|---:|---:|---:|---|"]
    for pair, t in report["sign_tests"].items():
        a, b = pair.split("_vs_")
        verdict = ("A better" if t["wins"] > t["losses"] else "B better") if t["p"] < alpha else "no"
        lines.append(
            f"| {METHOD_LABELS[a]} vs {METHOD_LABELS[b]} | {t['wins']} | {t['losses']} | {t['p']:.2g} | {verdict} |"
        )
    return "\n".join(lines)


def markdown_report(report: dict[str, Any], study: dict[str, Any] | None = None, alpha: float = 0.01) -> str:
    """The result as Markdown a README can quote: summary table with its legend, sign tests, validation-size study."""
    parts = [
        summary_table(report, alpha=alpha),
        ", ".join(f"`{sym}`: Area significantly below {METHOD_LABELS[ref]}" for ref, sym in AREA_MARKS.items())
        + f" (paired sign test over {report['trials']} trials, alpha = {alpha}). MLP and MatFac are clairvoyant "
        "upper bounds.",
        sign_test_table(report, alpha=alpha),
    ]
    if study is not None:
        parts.append(f"Validation-size study (Area, mean ± 96% half-width over {study['trials']} trials):")
        parts.append(val_size_table(study, alpha=alpha))
    return "\n\n".join(parts)


def val_size_table(study: dict[str, Any], alpha: float = 0.01) -> str:
    """Markdown table of the validation-size study: Area +/- 96% half-width per method and size."""
    sizes = study["sizes"]
    head = "| method | " + " | ".join(
        f"{s} (all)" if s == study["n_val_all"] else str(s) for s in sizes
    ) + " |"
    lines = [head, "|---|" + "---:|" * len(sizes)]
    for m, vals in study["methods"].items():
        cells = [f"{mu:.4f} ± {hw:.4f}" for mu, hw in zip(vals["mean"], vals["half_width"], strict=True)]
        lines.append(f"| {METHOD_LABELS[m]} | " + " | ".join(cells) + " |")
    for pair, tests in study["sign_tests"].items():
        a, b = pair.split("_vs_")
        cells = [f"{t['wins']}/{t['losses']}{' *' if t['p'] < alpha else ''}" for t in tests]
        label = f"sign test {METHOD_LABELS[a]} vs {METHOD_LABELS[b]} (wins/losses)"
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    for pair, diff in study.get("paired_area_difference", {}).items():
        a, b = pair.split("_vs_")
        cells = [f"{mu:+.4f} ± {hw:.4f}" for mu, hw in zip(diff["mean"], diff["half_width"], strict=True)]
        lines.append(f"| Area of {METHOD_LABELS[a]} − {METHOD_LABELS[b]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
