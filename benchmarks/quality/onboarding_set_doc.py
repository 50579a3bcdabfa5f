"""Regenerate docs/results.md's onboarding-set section and its plots from the study's JSONs in
docs/results/onboarding_set/: on each shared dataset, the validation-size study with the first N validation
prompts chosen by each strategy of `uniroute/selection/onboarding_order.py`, against N random ones on the same
trials (the paper's protocol; UniRoute K-means; 100 trials, seed 0).

Everything between the `## Onboarding set` heading and the next `## ` heading is rewritten. With --run, the
three studies run first (sequentially), with the commands the section prints.

Run: `UNIROUTE_HOME=.uniroute-eval OMP_NUM_THREADS=1 .venv/bin/python -m benchmarks.quality.onboarding_set_doc [--run]`
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

from benchmarks.quality.results_doc import DATASETS, SEED, TRIALS  # noqa: E402
from benchmarks.runner import REPO as ROOT  # noqa: E402
from uniroute.experiments.onboarding_study import selection_table  # noqa: E402

# What the runs in docs/results/onboarding_set/ and onboarding_adaptive/ were measured with, printed in their
# commands: pinned, not the build default (results_doc.EMBEDDER), which moves on with the README's table; re-run
# them to move this.
EMBEDDER = "static"
OUT_DIR = ROOT / "docs" / "results" / "onboarding_set"
ADAPTIVE_DIR = ROOT / "docs" / "results" / "onboarding_adaptive"  # the adaptive strategies with the default router
ADAPTIVE_STRATEGIES = "adaptive,adaptive_shared"
ADAPTIVE_METHOD = "kmeans_shrunk"  # the default router (count-aware K-means)
PILOT = ROOT / "benchmarks" / "results" / "onboarding_estimator_pilot.json"
ESTIMATORS = {"paper": "paper's mean", "paper5": "paper's mean, shrunk (5) toward the pool prior",
              "ref0": "pool-referenced", "ref5": "pool-referenced, shrunk (5)",
              "refA": "pool-referenced, tuned shrinkage"}
REGRESSION_PILOT = ROOT / "benchmarks" / "results" / "onboarding_regression_pilot.json"
REGRESSION_ESTIMATORS = {"paper": "paper's mean (default router)", "regression": "regression, ridge by LOO",
                         "ridge30": "regression, ridge 30", "softmax": "softmax over pool LLMs"}
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


def estimator_note(pilot: Path = PILOT, sizes: tuple[str, ...] = ("25", "50")) -> list[str]:
    """The pool-referenced estimator's pilot (benchmarks/quality/onboarding_estimator_pilot.py): per recorded run,
    each strategy and estimator against random with the paper's mean at 25 and 50 answers."""
    if not pilot.exists():
        return []
    runs = json.loads(pilot.read_text())
    parts = ["", "### A pool-referenced estimator for the newcomer (pilot)", "", (
        "A newcomer's cell as the pool's cell (training LLMs, every validation prompt of the cluster) plus its "
        "mean difference from the pool on the prompts it answered there (shrunk toward its overall difference). "
        "In the study every test LLM answers the same prompts, so the shift from the paper's mean is shared by "
        "every test LLM in a cluster and the routing decision ignores it: the study cannot reward the "
        "estimator (random rows: the same Area). `mixed` runs set the test LLMs beside the training LLMs "
        "measured on every validation prompt (the serving case), where it can matter. `balanced` (pilot only): "
        "`allocated` across clusters, within a cluster a systematic sample along the pool's mean loss. "
        "`default_router` runs measure count-aware K-means (the default router, strength tuned per trial; "
        "its 'paper's mean' rows are the default router itself); the others plain K-means, as the tables above. "
        "Difference of test Area from random prompts with the paper's mean (wins/losses, sign test p).")]
    for name, run in runs.items():
        table = run["against_random_paper"]
        parts += ["", f"`{name}`: `{run['command']}` ({run['trials']} trials, seed {run['seed']})", "",
                  "| strategy | estimator | " + " | ".join(f"N = {n}" for n in sizes) + " |",
                  "|---|---|" + "---:|" * len(sizes)]
        for strategy, rows in table.items():
            if strategy == "all_prompts_area":
                continue
            for est, entries in rows.items():
                if est == "refA" and "ref0" in rows:  # plain K-means tunes no strength: the same Areas as ref0
                    continue
                cells = [f"{e['difference']:+.4f} ({e['wins']}/{e['losses']}, p {e['p']:.2f})"
                         for e in (entries[n] for n in sizes if n in entries)]
                parts.append(f"| {strategy} | {ESTIMATORS.get(est, est)} | " + " | ".join(cells) + " |")
    return parts


def regression_note(pilot: Path = REGRESSION_PILOT, sizes: tuple[str, ...] = ("25", "50")) -> list[str]:
    """The regression estimator's pilot (benchmarks/quality/onboarding_regression_pilot.py): one table, each
    (strategy, estimator) against random prompts with the default router's cells, per dataset and size."""
    if not pilot.exists():
        return []
    records = json.loads(pilot.read_text())
    pilots = [run for name, run in records.items() if name.startswith("pilot")]  # "check...": longer re-runs
    runs = {d: run for d in DATASETS for run in pilots if f"/{d}/" in run["command"]}  # the doc's dataset order
    if not runs:
        return []
    first = next(iter(runs.values()))
    parts = ["", "### A regression estimator for the newcomer (pilot, default router)", "", (
        "A newcomer's cell as its loss on every validation prompt of the cluster: observed where it answered, "
        "predicted elsewhere from the training LLMs' losses on that prompt, averaged over the cluster (survey "
        "sampling's regression estimator). The prediction differs per newcomer, so unlike the pool-referenced "
        "cell it does not cancel between test LLMs. `regression`: ridge regression of the newcomer's answered "
        "losses on the pool LLMs' losses (intercept free, weights shrunk toward the pool mean, strength by "
        "leave-one-out on its own answers); `ridge30`: the same with a fixed strength of 30; `softmax`: the pool "
        "LLMs mixed by the likelihood of the newcomer's answers (miss rate 0.3) plus its mean residual. "
        "`disagree`: `allocated` across clusters, within a cluster the prompts the training LLMs disagree on most "
        "first (they tell whom a newcomer resembles). Only the "
        "newcomer's answered labels are read. Count-aware K-means (the default router, K and strength tuned per "
        "trial, static embedder). Difference of test Area from random prompts with the default router's own "
        f"cells (wins/losses, sign test p, `*` p < 0.05); {first['trials']} trials, seed {first['seed']}.")]
    parts += ["", "Commands: " + "; ".join(f"`{run['command']}`" for run in runs.values()), "",
              "| strategy | estimator | " + " | ".join(f"{DATASETS[d]['title']} N = {n}" for d in runs
                                                     for n in sizes) + " |",
              "|---|---|" + "---:|" * (len(runs) * len(sizes))]
    winners = []
    for strategy, rows in first.items():
        if not isinstance(rows, dict):  # the header entries (command, trials, the all-prompts Area)
            continue
        for est in rows:
            cells, wins_all = [], True
            for run in runs.values():
                for n in sizes:
                    e = run.get(strategy, {}).get(est, {}).get(n)
                    if e is None:
                        cells.append("")
                        wins_all = False
                        continue
                    star = " *" if e["p"] < 0.05 else ""
                    cells.append(f"{e['difference']:+.4f} ({e['wins']}/{e['losses']}{star})")
                    wins_all &= e["wins"] > e["losses"] and e["p"] < 0.05
            if wins_all and (strategy, est) != ("random", "paper"):
                winners.append(f"{strategy} + {est}")
            parts.append(f"| {strategy} | {REGRESSION_ESTIMATORS.get(est, est)} | " + " | ".join(cells) + " |")
    at = " and ".join(sizes)
    parts += ["", "Test Area with random prompts (" + " / ".join(f"N = {n}" for n in sizes) + " / all validation "
              "prompts), the gap a choice could close: " + "; ".join(
                  f"{DATASETS[d]['title']} " + " / ".join(f"{run['random']['paper'][n]['area']:.4f}" for n in sizes)
                  + f" / {run['all_prompts_area']:.4f}" for d, run in runs.items()) + "."]
    for name, run in records.items():
        if not name.startswith("pilot"):  # a re-run of a few cells with more trials, printed beside the table
            cells = [f"{strategy} + {est} {entries[n]['difference']:+.4f} ({entries[n]['wins']}/"
                     f"{entries[n]['losses']}, p {entries[n]['p']:.3f}) at {n}"
                     for strategy, rows in run.items() if isinstance(rows, dict)
                     for est, entries in rows.items() if (strategy, est) != ("random", "paper")
                     for n in sizes if n in entries]
            parts += ["", f"`{name}` (`{run['command']}`, {run['trials']} trials): " + "; ".join(cells) + "."]
    parts += ["", (f"Verdict: beats random + the default router's cells at N = {at} on every dataset (p < 0.05): "
                   + ", ".join(winners)) if winners else
              f"Verdict: no combination beats random + the default router's cells at both N = {at} on every "
              "dataset (p < 0.05)."]
    return parts


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
    parts += estimator_note()
    parts += regression_note()
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
