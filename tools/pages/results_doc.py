"""Regenerate docs/results.md's quality section, the headline quality table at its top, and their plots, from the
evaluation JSONs in docs/results/.

Everything between the `## Quality` heading and the next `## ` heading of docs/results.md is rewritten from
`docs/results/<dataset>.json` and `<dataset>_valsize.json` (tables, the check of `auto` against every router
kind, the grids' edges), and the deferral-curve and validation-size PNGs are redrawn from the same files.
With --run, the three 100-trial evaluations are run first (sequentially), exactly with the commands the section
prints.

Run: `UNIROUTE_HOME=.uniroute-eval OMP_NUM_THREADS=1 .venv/bin/python -m tools.pages.results_doc [--run]`
"""

from __future__ import annotations

import argparse
import json
import logging
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from tools.pages import REPO as ROOT
from tools.pages.readme_block import rewrite_block
from uniroute.experiments.markdown import markdown_report
from uniroute.experiments.methods import KIND_METHODS, METHOD_LABELS, METHODS
from uniroute.experiments.plots import write_curve_plot, write_val_size_plot
from uniroute.settings import DEFAULT_BUILD_EMBEDDER

RESULTS_DIR = ROOT / "docs" / "results"
DOC = ROOT / "docs" / "results.md"
TRIALS, SEED = 100, 0
# The README's table describes what builds serve, so its runs use the builds' default embedder, read from settings
# (one source): flipping the default makes main() refuse the old runs until they are measured on the new one.
EMBEDDER = DEFAULT_BUILD_EMBEDDER
EMBEDDER_LABELS = {"static": "the static embedder distilled from MiniLM",
                   "minilm-onnx": "`minilm-onnx`: all-MiniLM-L6-v2 in int8 ONNX",
                   "minilm": "all-MiniLM-L6-v2 through sentence-transformers"}
EMBEDDER_LABEL = EMBEDDER_LABELS[EMBEDDER]
VAL_SIZES = "25,50,all"  # the validation-size study: the sizes auto is checked at
AUTO_TOLERANCE = 0.001  # auto's mean Area may be this far below the best router kind's
AUTO_ALPHA = 0.05  # and never significantly below any kind at this level (paired sign test)
CHECK_SIZES = (25, 50)  # validation sizes checked besides "all"
CRITERION_KINDS = ("knn", "kmeans", "learnedmap")  # the kinds auto is held against
README_METHODS = ("zero", "knn", "kmeans", "kmeans_shrunk", "kmeans_hier", "learnedmap", "auto")  # the headline table

DATASETS: dict[str, dict[str, str]] = {
    "routerbench_subset": {
        "title": "RouterBench subset",
        "short": "RouterBench",
        "prompt_part": "last-block",
        "about": "USD costs; embeddings of the last block of each few-shot prompt, because the few-shot examples "
                 "before it are shared by many prompts",
    },
    "mmlu_pro_cot29": {
        "title": "MMLU-Pro, 29 LLMs",
        "short": "MMLU-Pro",
        "prompt_part": "full",
        "about": "costs are parameter counts",
    },
    "routerdc_model7": {
        "title": "RouterDC, 7 LLMs",
        "short": "RouterDC",
        "prompt_part": "full",
        "about": "7 LLMs of 7-8B parameters (costs are parameter counts, all within 10% of each other: below "
                 "normalised cost 0.9 every curve is flat, so the Areas are close and the routers differ in how "
                 "they spend the last 10%)",
    },
}

INTRO = """`uniroute evaluate` runs DESIGN.md's dynamic-pool protocol: per trial, LLMs are split at random into training
LLMs (2/3; half when fewer than 12) and unseen test LLMs, prompts 60/10/30 into train/validation/test; test
LLMs are "onboarded" from their validation results only and every router is scored among the test LLMs on the
test prompts. MLP and MatFac are clairvoyant oracles trained with the test LLMs' labels: upper bounds, not
admissible routers. QNC is the mean over the trials where the curve reaches the best test LLM's quality
(`QNC = inf` is the share where it never does).

The router kinds are UniRoute (K-means), UniRoute (K-means, count-aware Psi) — each Psi cell shrunk toward the
LLM's overall error by s pseudo-prompts, s in {0, 2, 5, 10, 20, 50} chosen on validation —, UniRoute
(LearnedMap, on K-means' K) and K-NN over the validation prompts. Each kind's K or k (and s) is chosen per trial
with the training LLMs only, by *simulated onboarding*: their Psi (or K-NN table) is measured on a random sample
of as many training prompts as there are validation prompts — as a new LLM's is — and the routing Area among
them is measured on other prompts; K and k climb a ladder until that Area turns down
(`uniroute/selection/candidates.py`, `grids.py`). `auto` is the product's choice of kind, made inside each
trial from the same training-LLM data (`uniroute/selection/selection.py`): the K-means hierarchy (count-aware Psi
on 2K clusters, each routed with its coarser groups; decision 0006) unless another kind's Area on fresh simulated
onboardings beats it by more than two standard errors (bootstrap over prompts and training LLMs). Its test Area
measures that whole procedure. In the method tables `*` marks an Area significantly below UniRoute (LearnedMap)
and `†` below UniRoute (K-means) (paired two-sided sign test over the trials, alpha = 0.01);
`auto` is tested against every kind at alpha = 0.05."""


def command(dataset: str, trials: int = TRIALS) -> str:
    """The evaluation command of a dataset, as run and as printed."""
    part = DATASETS[dataset]["prompt_part"]
    return (f"uniroute evaluate --data ../shared/datasets/{dataset} --trials {trials} --seed {SEED} "
            f"--embedder {EMBEDDER} --methods {','.join(METHODS)} --prompt-part {part} --val-sizes {VAL_SIZES} "
            f"--out docs/results/{dataset}.json")


def check_embedder(path: Path, report: dict[str, Any], embedder: str = EMBEDDER) -> None:
    """Refuse a run of another embedder than the builds' default: the README's table would not be what builds serve."""
    if not report["embedder_id"].startswith(f"{embedder}:"):
        raise SystemExit(f"{path}: embedder {report['embedder_id'].split(':')[0]}, but the build default "
                         f"(settings.DEFAULT_BUILD_EMBEDDER) is {embedder}: re-run it with --embedder {embedder}")


def _load(results_dir: Path, dataset: str) -> tuple[dict[str, Any], dict[str, Any] | None]:
    report = json.loads((results_dir / f"{dataset}.json").read_text())
    study_path = results_dir / f"{dataset}_valsize.json"
    return report, json.loads(study_path.read_text()) if study_path.exists() else None


def _auto_against(tests: dict[str, Any], kind: str, index: int | None = None) -> tuple[int, int, float]:
    """(auto's wins, auto's losses, p) against a kind, from sign tests keyed "A_vs_B" in either order."""
    flip = f"auto_vs_{kind}" not in tests
    t = tests[f"{kind}_vs_auto" if flip else f"auto_vs_{kind}"]
    t = t if index is None else t[index]
    return (t["losses"], t["wins"], t["p"]) if flip else (t["wins"], t["losses"], t["p"])


def auto_checks(report: dict[str, Any], study: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Per validation size (all, 25, 50): auto's Area against the best kind's and its sign tests against each."""
    kinds = [k for k in KIND_METHODS if k in report["methods"]]
    sizes = [(f"all ({report['n_val_prompts']})", {m: report["methods"][m]["area"] for m in ["auto", *kinds]},
              {k: _auto_against(report["sign_tests"], k) for k in kinds})]
    for size in CHECK_SIZES if study is not None else ():
        if size in study["sizes"]:
            i = study["sizes"].index(size)
            sizes.append((str(size), {m: study["methods"][m]["mean"][i] for m in ["auto", *kinds]},
                          {k: _auto_against(study["sign_tests"], k, i) for k in kinds}))
    checks = []
    for label, areas, tests in sizes:
        best = max(CRITERION_KINDS, key=lambda k: areas[k])
        below = [k for k, (w, los, p) in tests.items() if k in CRITERION_KINDS and los > w and p < AUTO_ALPHA]
        checks.append({"size": label, "auto": areas["auto"], "best": best, "best_area": areas[best],
                       "within": areas["auto"] >= areas[best] - AUTO_TOLERANCE, "significantly_below": below,
                       "tests": tests, "areas": areas})
    return checks


def _check_lines(dataset: str, checks: list[dict[str, Any]]) -> list[str]:
    lines = []
    for c in checks:
        verdict = "met" if c["within"] and not c["significantly_below"] else "**not met**"
        tests = ", ".join(f"{METHOD_LABELS[k]} {w}-{los} (p = {p:.2g})" for k, (w, los, p) in c["tests"].items())
        lines.append(f"| {DATASETS[dataset]['title']} | {c['size']} | {c['auto']:.4f} | {METHOD_LABELS[c['best']]} "
                     f"{c['best_area']:.4f} | {c['auto'] - c['best_area']:+.4f} | {tests} | {verdict} |")
    return lines


def summary(reports: dict[str, tuple[dict[str, Any], dict[str, Any] | None]]) -> str:
    """The cross-dataset summary: every method's Area, and auto's check at each validation size."""
    methods = [m for m in METHODS if all(m in r["methods"] for r, _ in reports.values())]
    head = "| dataset | trials | LLMs | val prompts | " + " | ".join(METHOD_LABELS[m] for m in methods) + " |"
    lines = [head, "|---|---:|---:|---:|" + "---:|" * len(methods)]
    seeds = sorted({r["seed"] for r, _ in reports.values()})
    for dataset, (r, _) in reports.items():
        admissible = [m for m in methods if not r["methods"][m]["oracle"]]
        top = max(admissible, key=lambda m: r["methods"][m]["area"])
        cells = [f"{r['methods'][m]['area']:.4f}" for m in methods]
        cells[methods.index(top)] = f"**{cells[methods.index(top)]}**"
        lines.append(f"| {dataset} | {r['trials']} | {len(r['models'])} | {r['n_val_prompts']} | "
                     + " | ".join(cells) + " |")
    check = ["| dataset | validation prompts | auto | best of K-NN, K-means, LearnedMap | auto − best "
             "| auto vs each kind (wins-losses) | criterion |", "|---|---|---:|---|---:|---|---|"]
    for dataset, (r, s) in reports.items():
        check += _check_lines(dataset, auto_checks(r, s))
    edges = ["| dataset | " + " | ".join(f"{METHOD_LABELS[k]} at edge / at bound" for k in KIND_METHODS) + " |",
             "|---|" + "---:|" * len(KIND_METHODS)]
    for dataset, (r, _) in reports.items():
        cells = [f"{100 * r['grid_edges'][k]['at_edge']:.0f}% / {100 * r['grid_edges'][k]['at_bound']:.0f}%"
                 if k in r["grid_edges"] else "—" for k in KIND_METHODS]
        edges.append(f"| {dataset} | " + " | ".join(cells) + " |")
    short = [f"{d} {r['trials']}" for d, (r, _) in reports.items() if r["trials"] < TRIALS]
    fewer = (f" **Fewer trials than the {TRIALS} the check asks for** on {', '.join(short)}: the evaluations shared "
             "2 cores with other heavy jobs and had to finish in the time there was, so their sign tests have less "
             "power to find a difference and their means wider intervals."
             if short else "")
    return "\n".join([
        f"**Summary over the datasets** (seed {'/'.join(map(str, seeds))}, {EMBEDDER_LABEL}; bold: the best "
        f"admissible method).{fewer}", "", *lines, "",
        "**`auto` against the router kinds** ([decisions/0002](decisions/0002-auto-rule.md): auto's mean Area at "
        "least the best of K-NN, K-means and "
        f"LearnedMap minus {AUTO_TOLERANCE}, and never significantly below any of them, paired sign test at "
        f"alpha = {AUTO_ALPHA}; the sign tests against K-means with count-aware Psi are shown too):",
        "", *check, "",
        "**Grid edges**: share of trials whose chosen K or k is the largest value searched while larger ones were "
        "left unsearched (an edge: the grid was too small), and the share at a principled bound (1, or as many as "
        "there are prompts):", "", *edges,
    ])


def _area(value: float) -> str:
    return f"{value:.4f}".lstrip("0")


def readme_quality(reports: dict[str, tuple[dict[str, Any], dict[str, Any] | None]]) -> str:
    """The README's quality table (mean Area per dataset) and, under it, where auto meets its check on the kinds."""
    methods = [m for m in README_METHODS if all(m in r["methods"] for r, _ in reports.values())]
    lines = ["| dataset (trials) | " + " | ".join(METHOD_LABELS[m] for m in methods) + " |",
             "|---|" + "---:|" * len(methods)]
    missed, held = [], []
    for dataset, (r, study) in reports.items():
        short = DATASETS[dataset]["short"]
        lines.append(f"| {short} ({r['trials']}) | " + " | ".join(_area(r["methods"][m]["area"]) for m in methods)
                     + " |")
        for c in auto_checks(r, study) if "auto" in r["methods"] else ():
            if c["within"] and not c["significantly_below"]:
                held.append(f"{short} {c['size'].split()[0]}")
                continue
            worst = c["significantly_below"][0] if c["significantly_below"] else c["best"]
            w, los, p = c["tests"][worst]
            size = c["size"].split()[0] if c["size"][0].isdigit() else f"all {r['n_val_prompts']:,}"
            missed.append(f"{short} with {size} validation prompts ({METHOD_LABELS[worst]} "
                          f"{_area(c['areas'][worst])} vs auto {_area(c['auto'])}; auto {w}-{los}, p = {p:.2g})")
    verdict = ("`auto` (what the build serves) is within "
               f"{AUTO_TOLERANCE} of the best of K-NN, K-means and LearnedMap and never significantly below one "
               f"(paired sign test, alpha = {AUTO_ALPHA}) at 25, 50 and all validation prompts")
    if missed:
        verdict += f" on {len(held)} of {len(held) + len(missed)} checks, **not** on " + "; ".join(missed) + "."
    else:
        verdict += " on every dataset."
    seeds = "/".join(map(str, sorted({r["seed"] for r, _ in reports.values()})))
    intro = (f"Quality (paper protocol, seed {seeds}, `{EMBEDDER}` embedder: the build default; mean Area; every "
             "table, plot and command in\n[the sections below](#quality-the-papers-protocol-on-real-data), "
             "regenerated by `python -m tools.pages.results_doc`):")
    return intro + "\n\n" + "\n".join(lines) + "\n\n" + verdict + "\n"


def _versus(report: dict[str, Any], a: str, b: str) -> str:
    """"A − B = +0.0012 (wins-losses 55-45, p = 0.3)" from a report's per-trial Areas."""
    w, los, p = _sign(report, a, b)
    diff = report["methods"][a]["area"] - report["methods"][b]["area"]
    return f"{diff:+.4f} ({w}-{los}, p = {p:.2g})"


def _sign(report: dict[str, Any], a: str, b: str) -> tuple[int, int, float]:
    t = report["sign_tests"].get(f"{a}_vs_{b}")
    if t is not None:
        return t["wins"], t["losses"], t["p"]
    t = report["sign_tests"][f"{b}_vs_{a}"]
    return t["losses"], t["wins"], t["p"]


def kinds_notes(reports: dict[str, tuple[dict[str, Any], dict[str, Any] | None]]) -> str:
    """What the numbers say about count-aware Psi and about the LearnedMap against K-means, per dataset."""
    shrunk = ["**Count-aware Psi** (UniRoute (K-means, count-aware Psi) − UniRoute (K-means), per-trial Area, "
              "all validation prompts; the strength s = 0 is among its choices, so it can only differ where "
              "shrinking helped on validation):"]
    lm = ["**LearnedMap against K-means.** The paper expects the LearnedMap to gain where there are many training "
          "LLMs to learn the map from. Test Area of UniRoute (LearnedMap) − UniRoute (K-means) on the unseen LLMs, "
          "and the same difference among the training LLMs on prompts no map was fitted to (the selection's "
          "simulated onboarding, mean over trials):"]
    for dataset, (r, _) in reports.items():
        m_train = len(r["models"]) - len(r["test_llm_points"][0])  # every trial splits the LLMs alike
        shrunk.append(f"- {dataset}: {_versus(r, 'kmeans_shrunk', 'kmeans')}")
        if r.get("auto"):
            val = r["auto"]["mean_val_area"]
            among = f"; among the training LLMs {val['learnedmap'] - val['kmeans']:+.4f}"
        else:
            among = ""
        lm.append(f"- {dataset} ({m_train} training LLMs per trial): {_versus(r, 'learnedmap', 'kmeans')}{among}")
    lm.append("Where the LearnedMap is behind among the training LLMs too, the map fitted to their labels does not "
              f"generalise even to new prompts for the same LLMs (`{EMBEDDER}` features and a few training LLMs "
              "give it little to learn beyond the K-means clusters); where it is ahead among them but behind on the "
              "unseen LLMs, it has learned what is particular to the training LLMs.")
    return "\n".join(shrunk) + "\n\n" + "\n".join(lm)


def dataset_section(dataset: str, report: dict[str, Any], study: dict[str, Any] | None) -> str:
    """One dataset's subsection: what the data is, the command, every table, the plots."""
    info = DATASETS[dataset]
    excluded = report.get("excluded_models") or []
    about = (f"{report['n_prompts']:,} prompts, {len(report['models'])} LLMs with a cost"
             + (f" (left out for want of a cost: {', '.join(f'`{m}`' for m in excluded)})" if excluded else "")
             + f"; {info['about']}; {report['trials']} trials, seed {report['seed']}, {report['n_val_prompts']} "
             f"validation and {report['n_test_prompts_mean']:.0f} test prompts per trial on average, "
             f"{report['seconds'] / 60:.0f} minutes on {report['workers'] or 'no'} Dask workers.")
    parts = [f"### {info['title']}", about, f"```\n{command(dataset, report['trials'])}\n```",
             markdown_report(report, study),
             f"![{info['title']} deferral curves](results/{dataset}.png)"]
    if study is not None:
        parts.append(f"![{info['title']} validation-size study](results/{dataset}_valsize.png)")
    return "\n\n".join(parts)


def quality_section(reports: dict[str, tuple[dict[str, Any], dict[str, Any] | None]]) -> str:
    """The whole `## Quality` section."""
    body = [INTRO, summary(reports), kinds_notes(reports)] + [dataset_section(d, r, s) for d, (r, s) in reports.items()]
    return "## Quality: the paper's protocol on real data\n\n" + "\n\n".join(body) + "\n\n"


def rewrite_doc(text: str, section: str) -> str:
    """docs/results.md with its `## Quality` section (up to the next `## ` heading) replaced."""
    start = text.index("## Quality")
    nxt = text.find("\n## ", start + 1)
    return text[:start] + section + (text[nxt + 1 :] if nxt >= 0 else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", action="store_true", help="run the three evaluations first (an hour or more)")
    parser.add_argument("--trials", type=int, default=TRIALS, help="trials per evaluation with --run")
    parser.add_argument("--results-dir", type=Path, default=RESULTS_DIR, help="where the evaluation JSONs are")
    parser.add_argument("--doc", type=Path, default=DOC, help="the Markdown file whose quality section is rewritten")
    parser.add_argument("--datasets", default=",".join(DATASETS), help="comma-separated datasets to include")
    args = parser.parse_args()
    datasets = [d for d in args.datasets.split(",") if d]
    logging.basicConfig(level=logging.WARNING)
    if args.run:
        for dataset in datasets:
            cmd = [str(Path(sys.executable).parent / "uniroute"), *shlex.split(command(dataset, args.trials))[1:]]
            subprocess.run(cmd, cwd=ROOT, check=True)
    reports = {d: _load(args.results_dir, d) for d in datasets}
    for dataset, (report, _) in reports.items():
        check_embedder(args.results_dir / f"{dataset}.json", report)
    for dataset, (report, study) in reports.items():
        title = f"{dataset}: {report['trials']} trials, {report['embedder_id']}"
        write_curve_plot(report, args.results_dir / f"{dataset}.png", title)
        if study is not None:
            write_val_size_plot(study, args.results_dir / f"{dataset}_valsize.png",
                                f"{title}\nArea vs number of validation prompts")
    args.doc.write_text(rewrite_doc(args.doc.read_text(), quality_section(reports)))
    if set(datasets) == set(DATASETS):  # the headline table quotes all three
        rewrite_block("quality-table", readme_quality(reports), args.doc)


if __name__ == "__main__":
    main()
