"""docs/results/paper_extensions.md from the JSON the paper-extension experiments wrote (nothing typed by hand).

Run: `.venv/bin/python -m tools.pages.paper_extensions` after `python -m benchmarks.paper.extensions run`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from benchmarks.paper.experiments import DENSITIES, EMBEDDER, EXPERIMENTS, RESULTS, shown
from tools.pages import REPO
from uniroute.experiments.markdown import markdown_report
from uniroute.experiments.methods import METHOD_LABELS
from uniroute.selection.statistics import sign_test


def _load(repo: Path, name: str) -> dict[str, Any] | None:
    path = repo / RESULTS / name
    return json.loads(path.read_text()) if path.exists() else None


def _test(a: list[float], b: list[float]) -> str:
    t = sign_test(a, b)
    return f"{t['wins']}-{t['losses']} (p = {t['p']:.2g})"


def _command(experiments: dict[str, list[str]], name: str) -> str:
    return f"```\n{shown(experiments[name])}\n```"


def _missing(name: str) -> str:
    return f"_Not run yet: `python -m benchmarks.paper.extensions run --only {name}`._"


def _pairwise(repo: Path, experiments: dict[str, list[str]]) -> list[str]:
    out = ["## 1. Routers from pairwise preferences", "",
           "Many teams only have head-to-head preferences. Here every trial of the paper's dynamic-pool protocol "
           "(DESIGN.md section 4) turns the labels it may see into Chatbot Arena-style sparse battles, **one battle "
           "per prompt between two random LLMs** (training prompts: two training LLMs; validation prompts: any two "
           "LLMs; the better score wins, equal scores tie), and `pairwise` routes with Psi from per-cluster "
           "Bradley-Terry strengths on those battles (K, and the ridge tying a cluster to the overall strength, "
           "chosen by the validation battles' log-likelihood). "
           "It never sees a pointwise label; it is scored like every method, on the test prompts among the unseen "
           "test LLMs. Columns: Area (mean over 20 trials); sign tests are paired over the same trials.", "",
           "| dataset | LLMs (train/test per trial) | ZeroRouter | UniRoute (K-means), every label | UniRoute from "
           "sparse battles | battles vs every label | battles vs ZeroRouter | median K (labels / battles) | "
           "a new LLM's evidence: labels / battles (about) |",
           "|---|---|---:|---:|---:|---|---|---|---|"]
    details, seen = [], []
    for name in ("routerbench_subset", "mmlu_pro_cot29", "routerdc_model7"):
        report = _load(repo, f"pairwise_{name}.json")
        if report is None:
            out.append(f"| {name} | | | | | | | | not run yet |")
            continue
        area, per = report["methods"], report["per_trial_area"]
        m, n_val = len(report["models"]), int(report["n_val_prompts"])
        n_train = m // 2 if m < 12 else round(2 * m / 3)
        out.append(
            f"| {name} | {m} ({n_train}/{m - n_train}) | {area['zero']['area']:.4f} | {area['kmeans']['area']:.4f} | "
            f"{area['pairwise']['area']:.4f} | {_test(per['pairwise'], per['kmeans'])} | "
            f"{_test(per['pairwise'], per['zero'])} | {report['k']['kmeans']['median']:.0f} / "
            f"{_pairwise_median_k(report)} | {n_val:,} / {2 * n_val / m:.0f} |")
        seen.append(f"{name}: 2 of {m}")
        details += [f"### {name}", "", _command(experiments, f"pairwise_{name}"), "",
                    f"![deferral curves](pairwise_{name}.png)", "", markdown_report(report), ""]
    out += ["", "Labels behind each validation prompt, battles against every label: " + "; ".join(seen) + ". "
            "The last column is the likely reason for the gap: a test LLM is onboarded "
            "from its validation prompts, where K-means and "
            "ZeroRouter read its label on every one, while one battle per prompt among M LLMs puts it in about "
            "2 n_val / M battles, each a single comparison with one other LLM. The gap to every label is smallest "
            "where that number is largest (RouterDC's 7 LLMs), on three datasets only; the density study below "
            "tests it."]
    return [*out, "", *_density(repo, experiments), "", *details]


def _density(repo: Path, experiments: dict[str, list[str]]) -> list[str]:
    """The battle-density study: the same trials with more disjoint battles per prompt."""
    out = ["### Battle density: is the gap the number of battles?", "",
           "The same trials (same splits, same K-means fits) with `--battles-per-prompt` b: per prompt, b disjoint "
           "battles between random LLMs with a label there (as many as the labels allow: on training prompts only "
           "the training LLMs fight, so floor(M_tr / 2) at most). b = 1 is the table above; ceil(M/4) and "
           "floor(M/2) (every LLM in one battle per prompt) follow. A test LLM then fights in about 2 b n_val / M "
           "validation battles, against n_val labels for K-means. ZeroRouter and K-means do not read battles: "
           "their Areas must not move with b (a check that the trials are the same).", "",
           "| dataset | b | a new LLM's battles (about) | ZeroRouter | UniRoute (K-means), every label | "
           "UniRoute from battles | battles vs every label | battles vs ZeroRouter | peak quality (K-means / "
           "battles) | median K (battles) | ridges chosen |", "|---|---:|---:|---:|---:|---:|---|---|---|---:|---|"]
    commands, closed = [], []
    for name, densities in DENSITIES.items():
        ends = [_load(repo, f"pairwise_{name}.json"), _load(repo, f"pairwise_{name}_b{densities[-1]}.json")]
        if all(ends):
            (sparse, dense), every = (r["methods"]["pairwise"]["area"] for r in ends), ends[0]["methods"]["kmeans"]
            closed.append(f"{name} {(dense - sparse) / (every['area'] - sparse):.0%}")
        for b in (1, *densities):
            report = _load(repo, f"pairwise_{name}.json" if b == 1 else f"pairwise_{name}_b{b}.json")
            if report is None:
                out.append(f"| {name} | {b} | | | | | | | | | not run yet |")
                continue
            if b != 1:
                commands.append(_command(experiments, f"pairwise_{name}_b{b}"))
            area, per = report["methods"], report["per_trial_area"]
            m, n_val = len(report["models"]), int(report["n_val_prompts"])
            if b != 1 and b not in (-(-m // 4), m // 2):
                raise ValueError(f"{name}: b = {b} is neither ceil(M/4) nor floor(M/2) of its M = {m} LLMs")
            priors = ", ".join(f"{k}: {v}" for k, v in report["k"]["pairwise"].get("prior_counts", {}).items())
            out.append(
                f"| {name} | {b} | {2 * b * n_val / m:.0f} | {area['zero']['area']:.4f} | "
                f"{area['kmeans']['area']:.4f} | {area['pairwise']['area']:.4f} | "
                f"{_test(per['pairwise'], per['kmeans'])} | {_test(per['pairwise'], per['zero'])} | "
                f"{area['kmeans']['peak']:.4f} / {area['pairwise']['peak']:.4f} | {_pairwise_median_k(report)} | "
                f"{priors} |")
    summary = ("Share of the b = 1 gap between battles and every label closed at floor(M/2) battles per prompt: "
               + "; ".join(closed) + ". Where a new LLM had tens of battles at b = 1 (RouterBench, MMLU-Pro), most of "
               "the gap is the number of battles; RouterDC's new LLMs already had hundreds, and less of its smaller "
               "gap closes. What remains with every LLM in one battle per prompt is what a comparison with one other "
               "LLM carries less than a label, and the scale of Psi (below).") if closed else ""
    return [*out, "", summary, "", "Commands (b = 1: the commands of the datasets below):", "", *commands, "",
            *PSI_SCALE]


PSI_SCALE = [
    "**The scale of Psi.** `pairwise` routes with Psi = 1 - sigmoid(theta), theta a model's per-cluster "
    "strength with every cluster's strengths centred on the pool's average: a win probability against the "
    "average LLM there, not an error rate. With hard clusters, at lambda = 0 only the order within a cluster "
    "counts, so the peak-quality column above hardly depends on the scale; along the cost trade-off the scale "
    "across clusters counts (in a cluster every LLM gets right, win probabilities still spread around 0.5 "
    "while accuracies barely differ, so the router pays for gains that are not there). A principled calibration "
    "from what the trial sees exists for answers graded right/wrong independently: decisive battles give "
    "theta = logit(accuracy) up to one shift per cluster (routers/cluster/bradley_terry.py), and the kind of tie fixes "
    "that shift, P(tie (bothbad)) = (1 - p_a)(1 - p_b) (the rate of untyped ties generally fits two shifts, "
    "one easy and one hard). It is not implemented: the trial's battles keep a tie as 0.5 without its kind, and a pure "
    "battle log has no pointwise accuracies of training LLMs to anchor on (anchoring on them would read labels "
    "this setting does not have).",
]


def _pairwise_median_k(report: dict[str, Any]) -> str:
    chosen = report.get("k", {}).get("pairwise")
    return f"{chosen['median']:.0f}" if chosen else "n/a"


def _shared_llms(shared: Path) -> str:
    """How many LLMs each pair of shared datasets has in common (names compared without an org/ prefix)."""
    names = {}
    for folder in sorted(p for p in shared.iterdir() if (p / "long.parquet").exists()):
        models = pd.read_parquet(folder / "long.parquet", columns=["model"])["model"].unique()
        names[folder.name] = {str(m).split("/")[-1].lower() for m in models}
    pairs = [f"{a} and {b}: {len(names[a] & names[b])}" for i, a in enumerate(names) for b in list(names)[i + 1:]]
    return "; ".join(pairs)


def _table(reports: dict[str, dict[str, Any]], key: str = "area") -> list[str]:
    """Method rows with one Area column per report (same methods in the same trials)."""
    heads = list(reports)
    methods = list(dict.fromkeys(m for r in reports.values() for m in r["methods"]))
    lines = ["| method | " + " | ".join(heads) + " |", "|---|" + "---:|" * len(heads)]
    for m in methods:
        cells = [f"{r['methods'][m][key]:.4f}" if m in r["methods"] else "—" for r in reports.values()]
        lines.append(f"| {METHOD_LABELS[m]} | " + " | ".join(cells) + " |")
    return lines


def _transfer(repo: Path, experiments: dict[str, list[str]], shared: Path) -> list[str]:
    pairwise = _load(repo, "transfer_mmlu_stem_to_humanities_pairwise.json")
    pointwise = _load(repo, "transfer_mmlu_stem_to_humanities_pointwise.json")
    out = ["## 2. Transfer across benchmark families (MMLU-Pro: STEM to the rest)", "",
           f"No two shared datasets have enough LLMs in common for a transfer between them ({_shared_llms(shared)} "
           "LLMs in common), so the transfer runs between benchmark families of MMLU-Pro, as the issue allows: train "
           "on the STEM categories, test on the other eight. As in the paper's Chatbot Arena to EmbedLLM experiment, "
           "the training log is pairwise (arena-style battles, one per prompt, made from MMLU-Pro's labels by "
           "`uniroute arena-battles`), the test log pointwise, and every shared LLM is both a training and a test "
           "LLM; the same run with the pointwise training log is the reference. Per trial: 90/10 train/validation "
           "split of the training log, half of the test log's prompts. K and k climb the ladders of "
           "`selection/grids.py`: on battles by the validation battles' log-likelihood, on labels by the "
           "simulated onboarding of `uniroute evaluate`; Psi (and K-NN's neighbours) come from the train prompts."]
    if pairwise is None or pointwise is None:
        return [*out, "", _missing("transfer_mmlu_pairwise transfer_mmlu_pointwise")]
    per_a, per_b = pairwise["per_trial_area"], pointwise["per_trial_area"]
    out += ["", f"{len(pairwise['shared_models'])} shared LLMs with costs (left out, no cost: "
            f"{', '.join(pairwise['excluded_models']) or 'none'}); {pairwise['n_train_log_prompts']:,} training and "
            f"{pairwise['n_test_log_prompts']:,} test prompts; {pairwise['trials']} trials. c(m): battles carry no "
            f"costs, so on battles from the {pairwise['costs_from']}; on labels from the "
            f"{pointwise['costs_from']}.", "",
            *_table({"Area, trained on battles": pairwise, "Area, trained on every label": pointwise}), "",
            *_table({"QNC, battles": pairwise, "QNC, every label": pointwise}, "qnc"), "",
            "Paired sign tests over the same trials (wins-losses of the first): "
            + "; ".join(f"{METHOD_LABELS[m]} on battles vs on labels {_test(per_a[m], per_b[m])}"
                        for m in per_a if m in per_b)
            + f"; K-means vs ZeroRouter on battles {_test(per_a['kmeans'], per_a['zero'])}"
            + f"; K-means vs K-NN on battles {_test(per_a['kmeans'], per_a['knn'])}.", "",
            _command(experiments, "mmlu_battles"), _command(experiments, "transfer_mmlu_pairwise"),
            _command(experiments, "transfer_mmlu_pointwise"), "",
            "![battles](transfer_mmlu_stem_to_humanities_pairwise.png)"]
    return out


def _attributes(repo: Path, experiments: dict[str, list[str]]) -> list[str]:
    text = _load(repo, f"attributes_routerbench_to_mbpp_{EMBEDDER}.json")
    attrs = _load(repo, "attributes_routerbench_to_mbpp_attributes.json")
    out = ["## 3. Prompt-attribute embedder (RouterBench: arc-challenge and winogrande to mbpp)", "",
           "The paper's K-means (Attributes) embeds a prompt by seven binary difficulty attributes predicted from a "
           "frozen text embedder. **How the labels were made:** no LLM endpoint is reachable here, so the labels "
           "come from a small fixed rule set over the text of each prompt's last block (`benchmarks/"
           "paper/attribute_rules.py`: lettered options or 'Answer:' for specificity, a science vocabulary for domain "
           "knowledge, length or sentence count for complexity, digits or task verbs for problem solving, code "
           "words for technical accuracy, everyday words for real-world application), the same rules for every "
           "benchmark. They are a crude stand-in for an LLM annotator (`uniroute annotate` asks one when "
           "configured). Heads are distilled on the frozen `static` embedder (the text embedder of every run "
           "here) from the training log's labels only; the mbpp prompts get "
           "predicted attributes. Transfer protocol as in section 2, pointwise, costs from the training log."]
    if text is None or attrs is None:
        return [*out, "", _missing(f"attribute_labels attributes_routerbench_{EMBEDDER} "
                                   "attributes_routerbench_attributes")]
    heads = attrs["attribute_heads"]
    rates = ", ".join(f"{k} {v:.2f}" for k, v in heads["label_rate"].items())
    accuracy = ", ".join(f"{k} {v:.2f}" for k, v in heads["head_training_accuracy"].items())
    per_m, per_a = text["per_trial_area"], attrs["per_trial_area"]
    return [*out, "", f"Labelled training prompts: {heads['labelled_prompts_fitted']:,}; share with each attribute: "
            f"{rates}. Heads' accuracy on their training labels: {accuracy}.", "",
            *_table({f"Area, {EMBEDDER}": text, "Area, attributes": attrs}), "",
            f"Paired sign tests (attributes vs {EMBEDDER}, same trials): "
            + "; ".join(f"{METHOD_LABELS[m]} {_test(per_a[m], per_m[m])}" for m in per_a if m in per_m) + ".", "",
            _command(experiments, "attribute_labels"), _command(experiments, f"attributes_routerbench_{EMBEDDER}"),
            _command(experiments, "attributes_routerbench_attributes"), "",
            "![attributes](attributes_routerbench_to_mbpp_attributes.png)"]


def _similarity(repo: Path, experiments: dict[str, list[str]]) -> list[str]:
    saved = _load(repo, "similarity_mmlu_pro_cot29.json")
    out = ["## 4. LLM-similarity map (MMLU-Pro, 29 LLMs)", ""]
    if saved is None:
        return [*out, _missing("similarity_mmlu")]
    cosine = np.asarray(saved["cosine"])
    off = cosine[~np.eye(len(cosine), dtype=bool)]
    pairs = saved["near_duplicates"]
    flagged = "; ".join(f"{p['model_a']} and {p['model_b']} (overall difference {p['z']:+.2f} standard errors, "
                        f"per-cluster chi-square {p['chi2']:.1f})" for p in pairs) or "none"
    return [*out, f"Cosine similarity of the {len(saved['models'])} LLMs' Psi rows centred on each cluster's pool "
            f"mean (K = {saved['k']} K-means clusters of all prompts, {saved['embedder_id']}), ordered by "
            f"hierarchical clustering; cosines range from {off.min():.3f} to {off.max():.4f}. Centring takes out "
            "which clusters are hard for everyone, which dominated the raw rows (raw cosines were all above 0.94). "
            "Near duplicates, pairs whose paired per-cluster differences a test cannot tell from sampling (overall "
            f"|z| <= 1.96 and chi-square within its 95th percentile {saved.get('chi2_limit', float('nan')):.1f}): "
            f"{flagged}. `select * from model_similarity` gives the same numbers for the champion router.", "",
            _command(experiments, "similarity_mmlu"), "",
            "![similarity](similarity_mmlu_pro_cot29.png)"]


def _runs(runs: dict[str, Any]) -> list[str]:
    lines = ["## Runs", "", "Wall time and the machine's load average (1 min) around each run; the 2 cores were shared "
             "with other work throughout.", "", "| experiment | exit | minutes | load before | load after |",
             "|---|---:|---:|---:|---:|"]
    for name, r in runs.items():
        lines.append(f"| {name} | {r['exit']} | {r['seconds'] / 60:.1f} | {r['load_average_before'][0]:.1f} | "
                     f"{r['load_average_after'][0]:.1f} |")
    return lines


def page(repo: Path, experiments: dict[str, list[str]], runs: dict[str, Any]) -> str:
    """The whole Markdown page."""
    shared = (repo / ".." / "shared" / "datasets").resolve()
    parts = [
        "# Results: pairwise preferences, transfer, prompt attributes, LLM similarity", "",
        "Generated by `python -m tools.pages.paper_extensions` from the JSON in `docs/results/`, written by "
        "`python -m benchmarks.paper.extensions run` (every command is shown below). 20 trials, seed 0, the "
        "`static` embedder (the default; on these datasets its routing Area matched MiniLM's within noise, see "
        "[embedders.md](embedders.md)); Area is the mean over trials; sign tests are paired two-sided over the "
        "same trials.", "",
        *_pairwise(repo, experiments), "", *_transfer(repo, experiments, shared), "",
        *_attributes(repo, experiments), "", *_similarity(repo, experiments), "", *_runs(runs), "",
    ]
    return "\n".join(parts)


def main() -> None:
    """Write the page from the saved JSON and the runs' record."""
    page_path, runs_path = REPO / RESULTS / "paper_extensions.md", REPO / RESULTS / "paper_extensions_runs.json"
    page_path.write_text(page(REPO, EXPERIMENTS, json.loads(runs_path.read_text()) if runs_path.exists() else {}))
    print(f"wrote {page_path}")


if __name__ == "__main__":
    main()
