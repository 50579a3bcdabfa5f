"""An evaluation report as Markdown tables a README can quote."""

from __future__ import annotations

import logging
from typing import Any

from uniroute.experiments.methods import KIND_METHODS, METHOD_LABELS, value_label
from uniroute.experiments.onboarding_study import selection_table
from uniroute.routers.kinds import router_kinds

log = logging.getLogger(__name__)

def _significantly_lower(report: dict[str, Any], a: str, b: str, alpha: float) -> bool:
    """Whether method a's per-trial Area is significantly below b's (paired sign test at level alpha)."""
    key = f"{a}_vs_{b}" if f"{a}_vs_{b}" in report["sign_tests"] else f"{b}_vs_{a}"
    t = report["sign_tests"][key]
    wins_a, losses_a = (t["wins"], t["losses"]) if key.startswith(f"{a}_vs_") else (t["losses"], t["wins"])
    return losses_a > wins_a and t["p"] < alpha


# Marks after an Area in the summary table: significantly below that reference kind's Area (RouterKind.report_mark;
# `*` first, as in the paper's table).
AREA_MARKS = dict(sorted(((k.name, k.report_mark) for k in router_kinds() if k.report_mark), key=lambda item: item[1]))


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
        # Today's name of the method (a saved report keeps the label of its day), else the one it was saved with.
        label = METHOD_LABELS.get(m, s["label"])
        qnc = "—" if s["qnc"] is None else f"{100 * s['qnc']:.1f}%"
        lines.append(
            f"| {label} | {s['area']:.4f}{mark} | {s['area50']:.4f} | {qnc} | "
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


def _paired(report: dict[str, Any], a: str, b: str) -> tuple[int, int, float]:
    """(wins of a, losses of a, p) from the report's sign test of a against b, whichever order it was stored in."""
    if f"{a}_vs_{b}" in report["sign_tests"]:
        t = report["sign_tests"][f"{a}_vs_{b}"]
        return t["wins"], t["losses"], t["p"]
    t = report["sign_tests"][f"{b}_vs_{a}"]
    return t["losses"], t["wins"], t["p"]


def auto_table(report: dict[str, Any], alpha: float = 0.05) -> str:
    """Markdown: auto's Area against each kind's (difference, paired sign test), how often auto chose the kind,
    and the kind's mean cross-fitted validation Area +/- SE and P(best) at selection time."""
    auto = report.get("auto")
    if not auto or "auto" not in report["methods"]:
        return ""
    lines = [
        f"| kind | Area | auto − kind | auto wins / losses | p | auto significantly below (alpha = {alpha}) "
        "| chosen by auto | val Area at selection (± SE) | P(best) at selection |",
        "|---|---:|---:|---:|---:|---|---:|---:|---:|",
    ]
    a = report["methods"]["auto"]["area"]
    for kind in (k for k in KIND_METHODS if k in auto["mean_val_area"]):
        area = report["methods"][kind]["area"] if kind in report["methods"] else None
        if area is None:
            cells = "— | — | — | — | —"
        else:
            w, los, p = _paired(report, "auto", kind)
            cells = f"{area:.4f} | {a - area:+.4f} | {w} / {los} | {p:.2g} | {'yes' if los > w and p < alpha else 'no'}"
        lines.append(
            f"| {METHOD_LABELS[kind]} | {cells} | {auto['chosen_counts'].get(kind, 0)} | "
            f"{auto['mean_val_area'][kind]:.4f} ± {auto['mean_val_area_se'][kind]:.4f} | "
            f"{100 * auto['mean_p_best'][kind]:.0f}% |"
        )
    return "\n".join(lines)


def edge_table(report: dict[str, Any]) -> str:
    """Markdown: per kind, the median chosen K or k, and how often it sat at an edge of its grid or at a bound."""
    lines = ["| kind | searched | median chosen | at a grid edge | at a bound (1, or all prompts) |",
             "|---|---|---:|---:|---:|"]
    for kind, t in report["k"].items():
        name = value_label(kind)
        lines.append(f"| {METHOD_LABELS[kind]} | {name} = {t['searched'][0]} … {t['searched'][-1]} | "
                     f"{t['median']:g} | {100 * t['at_edge']:.0f}% | {100 * t['at_bound']:.0f}% |")
    return "\n".join(lines)


def markdown_report(report: dict[str, Any], study: dict[str, Any] | None = None, alpha: float = 0.01) -> str:
    """The result as Markdown a README can quote: summary table with its legend, auto against each kind, the
    grids' edges, the sign tests and the validation-size study."""
    parts = [
        summary_table(report, alpha=alpha),
        ", ".join(f"`{sym}`: Area significantly below {METHOD_LABELS[ref]}" for ref, sym in AREA_MARKS.items())
        + f" (paired sign test over {report['trials']} trials, alpha = {alpha}). MLP and MatFac are clairvoyant "
        "upper bounds.",
    ]
    if report.get("auto"):
        parts += ["`auto` against each router kind (per-trial Area, paired sign test):", auto_table(report)]
    if report.get("k"):
        parts += ["Chosen hyper-parameters and the grids' edges:", edge_table(report)]
    parts += ["<details><summary>All paired sign tests (per-trial Area)</summary>",
              sign_test_table(report, alpha=alpha), "</details>"]
    if study is not None:
        with_auto = "auto" in study["methods"]
        parts.append(f"Validation-size study (Area, mean ± 96% half-width over {study['trials']} trials"
                     + ("; sign tests of auto against each kind, `*`: p < 0.05):" if with_auto else "):"))
        parts.append(val_size_table(study, alpha=0.05 if with_auto else alpha))
        if study.get("onboarding_set"):
            parts.append("Onboarding set: Area of the first N validation prompts chosen by each strategy minus "
                         "Area of N random ones (same trials), ± 96% half-width; sign test wins/losses (`*`: "
                         "p < 0.05) and the share of the gap between N random prompts and all of them closed:")
            parts.append(selection_table(study["onboarding_set"]))
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
    pairs = study["sign_tests"]
    if "auto" in study["methods"]:  # with auto, the pairs that matter are auto against each kind
        pairs = {p: t for p, t in pairs.items() if "auto" in p.split("_vs_")}
    for pair, tests in pairs.items():
        a, b = pair.split("_vs_")
        cells = [f"{t['wins']}/{t['losses']}{' *' if t['p'] < alpha else ''}" for t in tests]
        label = f"sign test {METHOD_LABELS[a]} vs {METHOD_LABELS[b]} (wins/losses)"
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    for pair, diff in study.get("paired_area_difference", {}).items():
        if pair not in pairs:
            continue
        a, b = pair.split("_vs_")
        cells = [f"{mu:+.4f} ± {hw:.4f}" for mu, hw in zip(diff["mean"], diff["half_width"], strict=True)]
        lines.append(f"| Area of {METHOD_LABELS[a]} − {METHOD_LABELS[b]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
