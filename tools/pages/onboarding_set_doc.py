"""Regenerate docs/results.md's onboarding-set section and its plots from the study's JSONs in
docs/results/onboarding_set/: on each shared dataset, the validation-size study with the first N validation
prompts chosen by each strategy of `uniroute/selection/onboarding_order.py`, against N random ones on the same
trials (the paper's protocol; UniRoute K-means; 100 trials, seed 0).

Everything between the `## Onboarding set` heading and the next `## ` heading is rewritten. With --run, the
three studies run first (sequentially), with the commands the section prints.

Run: `UNIROUTE_HOME=.uniroute-eval OMP_NUM_THREADS=1 .venv/bin/python -m tools.pages.onboarding_set_doc [--run]`
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 - after the backend is chosen

from tools.pages import REPO as ROOT  # noqa: E402
from tools.pages.results_doc import DATASETS, SEED, TRIALS  # noqa: E402
from uniroute.experiments.onboarding_study import selection_table  # noqa: E402

# What the runs in docs/results/onboarding_set/ and onboarding_adaptive/ were measured with, printed in their
# commands: pinned, not the build default (results_doc.EMBEDDER), which moves on with the README's table; re-run
# them to move this.
EMBEDDER = "static"
OUT_DIR = ROOT / "docs" / "results" / "onboarding_set"
ADAPTIVE_DIR = ROOT / "docs" / "results" / "onboarding_adaptive"  # the adaptive strategies with the default router
ADAPTIVE_STRATEGIES = "adaptive,adaptive_shared"
ADAPTIVE_METHOD = "kmeans_shrunk"  # the default router (count-aware K-means)
ESTIMATORS_RECORD = "0005-onboarding-set.md"  # the verdict on the pilots' estimators (docs/decisions/)
DOC = ROOT / "docs" / "results.md"
HEADING = "## Onboarding set: which validation prompts a new LLM answers"
SIZES = "10,25,50,100"
STRATEGIES = "stratified,allocated,anchored"
METHOD = "kmeans"


def command(dataset: str, trials: int = TRIALS, part: str | None = None, adaptive: bool = False,
            sizes: str = SIZES) -> str:
    """The study's command for a dataset (part: the prompt part it was run with; default the quality section's;
    adaptive: the adaptive strategies' study with the default router)."""
    part = part or DATASETS[dataset]["prompt_part"]
    method, strategies, folder = ((ADAPTIVE_METHOD, ADAPTIVE_STRATEGIES, "onboarding_adaptive") if adaptive
                                  else (METHOD, STRATEGIES, "onboarding_set"))
    return (f"uniroute evaluate --data ../shared/datasets/{dataset}/long.parquet --trials {trials} --seed {SEED} "
            f"--embedder {EMBEDDER} --methods {method} --prompt-part {part} --val-sizes {sizes} "
            f"--val-selection {strategies} --workers 0 --out docs/results/{folder}/{dataset}.json")


def _plot(study: dict[str, Any], path: Path, title: str, method: str = METHOD) -> None:
    """Area against N for random and each strategy (means over the trials), all prompts as a dashed line."""
    report = study["onboarding_set"]
    sizes = report["sizes"]
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    first = next(iter(report["strategies"].values()))[method]
    ax.plot(sizes, [e["random_area"] for e in first], marker="o", color="black", label="random")
    for strategy, rows in report["strategies"].items():
        ax.plot(sizes, [e["area"] for e in rows[method]], marker="o", label=strategy)
    ax.axhline(first[0]["all_prompts_area"], color="grey", linestyle="--", label="all validation prompts")
    ax.set_xscale("log")
    ax.set_xticks(sizes)
    ax.set_xticklabels([str(s) for s in sizes])
    ax.set_xlabel("validation prompts a test LLM answers (N)")
    ax.set_ylabel("Area on unseen test LLMs (mean over trials)")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def verdict(report: dict[str, Any], sizes: tuple[int, ...] = (25, 50), alpha: float = 0.05,
            method: str = METHOD) -> str:
    """Which strategies beat random significantly at every one of `sizes`, and which are significantly worse
    anywhere: the issue's criterion, read from the sign tests."""
    wins, worse = [], []
    for strategy, rows in report["strategies"].items():
        tests = {e["size"]: e["sign_test"] for e in rows[method]}
        if all(s in tests and tests[s]["wins"] > tests[s]["losses"] and tests[s]["p"] < alpha for s in sizes):
            wins.append(strategy)
        if any(t["losses"] > t["wins"] and t["p"] < alpha for t in tests.values()):
            worse.append(strategy)
    at = " and ".join(str(s) for s in sizes)
    beat = f"beats random at N = {at} (p < {alpha}): {', '.join(wins)}" if wins else \
        f"no strategy beats random at both N = {at} (p < {alpha})"
    return f"Verdict: {beat}; significantly worse than random at some N: {', '.join(worse) or 'none'}."


def estimators_note() -> list[str]:
    """Where the verdict on other estimators of a newcomer's cells stands: a decision record, not a pilot's tables."""
    return ["", "### Other estimators of a newcomer's cells", "", (
        "Two pilots estimated a newcomer's Psi cell otherwise than by the mean of its answers: relative to the pool "
        "on the same prompts, and by survey sampling's regression estimator. Neither made a chosen onboarding set "
        "beat random at both N = 25 and 50; their figures, commands and the decision are in "
        f"[decisions/{ESTIMATORS_RECORD}](decisions/{ESTIMATORS_RECORD}).")]


def adaptive_note(out_dir: Path = ADAPTIVE_DIR, plots: bool = True) -> list[str]:
    """The adaptive strategies' study (experiments/adaptive_study.py) with the default router, per dataset run."""
    runs = [d for d in DATASETS if (out_dir / f"{d}_valsize.json").exists()]
    if not runs:
        return []
    parts = ["", "### Adaptive onboarding: each next batch from the newcomer's own answers (default router)", "", (
        "A first batch of 10 prompts (`allocated`, the pool's information only), then batches of 5 chosen from "
        "the answers so far: each goes to the cells (newcomer, cluster) where one more answer is worth most to "
        "the routing decision, the knowledge gradient of the cell's estimate (the router's shrunk Psi, a "
        "Beta-like posterior variance) against the best other LLM's, averaged over the cost weights and weighted "
        "by the cluster's traffic; none where the newcomer clearly wins or clearly loses "
        "(`uniroute/selection/adaptive_onboarding.py`). `adaptive`: each test LLM its own prompts; "
        "`adaptive_shared`: one batch per round answered by every test LLM (the gain summed over them), so "
        "their cells stay measured on the same prompts. The router's K and strength are the random arm's at the "
        "same N, so the pairing measures the choice alone. A poisoning test flips every label and cost a newcomer "
        "was not asked and checks the choice is unchanged (`tests/selection/test_adaptive_onboarding.py`). It lives "
        "in the study only (`--val-selection adaptive,adaptive_shared`), not among `uniroute onboarding-set`'s "
        "strategies.")]
    for dataset in runs:
        about = DATASETS[dataset]
        study = json.loads((out_dir / f"{dataset}_valsize.json").read_text())
        report = json.loads((out_dir / f"{dataset}.json").read_text())
        png = out_dir / f"{dataset}.png"
        if plots:
            _plot(study, png, f"{about['title']}: adaptive onboarding ({study['onboarding_set']['trials']} trials)",
                  ADAPTIVE_METHOD)
        report_sizes = ",".join(str(n) for n in study["onboarding_set"]["sizes"])
        run = command(dataset, study["onboarding_set"]["trials"], report.get("prompt_part"), adaptive=True,
                      sizes=report_sizes)
        parts += ["", f"#### {about['title']}", "", f"`{run}`", "", selection_table(study["onboarding_set"]), "",
                  verdict(study["onboarding_set"], method=ADAPTIVE_METHOD), "",
                  f"![{about['title']}, adaptive](results/{out_dir.name}/{dataset}.png)"]
    return parts


def section(out_dir: Path = OUT_DIR, plots: bool = True) -> str:
    parts = [HEADING, "", (
        "`uniroute onboarding-set` chooses the validation prompts a new LLM should answer "
        "(`uniroute/selection/onboarding_order.py` states each strategy and why). The study is the validation-size "
        "study with the first N validation prompts chosen by a strategy from the training LLMs' information "
        "only, against N random ones on the same trials: the difference of test Area ± 96% half-width, the "
        "sign test (wins/losses, `*` p < 0.05) and the share of the gap between N random prompts and all of "
        "them that the choice closes. UniRoute (K-means); a poisoning test checks the choice never reads a test "
        "LLM's answers (`tests/selection/test_onboarding_set.py`).")]
    for dataset, about in DATASETS.items():
        path = out_dir / f"{dataset}_valsize.json"
        if not path.exists():
            continue
        study = json.loads(path.read_text())
        report = json.loads((out_dir / f"{dataset}.json").read_text())
        png = out_dir / f"{dataset}.png"
        if plots:
            _plot(study, png, f"{about['title']}: onboarding sets ({study['onboarding_set']['trials']} trials)")
        trials = study["onboarding_set"]["trials"]
        run = command(dataset, trials, report.get("prompt_part"))
        parts += ["", f"### {about['title']}", "", f"`{run}`", "", selection_table(study["onboarding_set"]), "",
                  verdict(study["onboarding_set"]), "", f"![{about['title']}]({png.relative_to(DOC.parent)})"]
    missing = [a["title"] for d, a in DATASETS.items() if not (out_dir / f"{d}_valsize.json").exists()]
    if missing:
        parts += ["", f"Not measured yet: {', '.join(missing)}."]
    parts += estimators_note()
    parts += adaptive_note(plots=plots)
    return "\n".join(parts) + "\n\n"


def replace_section(text: str, body: str) -> str:
    """The doc with its onboarding-set section(s) replaced by one body, where the first stood (appended if none).
    A section at the end of the file counts too: the old pattern needed a heading after it, left such a copy
    behind, and the doc carried two sections."""
    pattern = re.compile(re.escape(HEADING) + r".*?(?=^## |\Z)", re.S | re.M)
    if not pattern.search(text):
        return text.rstrip("\n") + "\n\n" + body
    first = True

    def once(_: re.Match) -> str:
        nonlocal first
        out, first = (body if first else ""), False
        return out

    return pattern.sub(once, text).rstrip("\n") + "\n"


def rewrite(doc: Path = DOC) -> None:
    doc.write_text(replace_section(doc.read_text(), section()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", action="store_true", help="run the three studies first (tens of minutes)")
    args = parser.parse_args()
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    if args.run:
        for dataset in DATASETS:
            argv = shlex.split(command(dataset))
            subprocess.run([sys.executable, "-m", "uniroute", *argv[1:]], cwd=ROOT, check=True)
    rewrite()


if __name__ == "__main__":
    main()
