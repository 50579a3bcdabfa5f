"""docs/results/embedders.md, generated from benchmarks/results/embedding.json (never hand-copied figures).

Run on its own to regenerate the page from the saved JSON: `.venv/bin/python -m tools.pages.embedders_table`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks.runner import REPO, RESULTS_DIR
from tools.pages.embedder_candidates import candidates_section
from tools.pages.embedder_share_rule import (
    SERVED,
    SHARE_LIMIT,
    gap_losses,
    result_figures,
    served_shares,
    share_below_best,
)
from uniroute.embed.kinds import embedder_kind
from uniroute.settings import DEFAULT_BUILD_EMBEDDER

RESULTS = RESULTS_DIR / "embedding.json"
PAGE = REPO / "docs" / "results" / "embedders.md"
FRONTIER_PLOT = PAGE.with_name("embedders_frontier.png")
ALPHA = 0.01
# The methods whose Area depends on the embedding (ZeroRouter's does not: equal Areas there check the splits).
ROUTING_METHODS = ("knn", "kmeans", "kmeans_shrunk", "learnedmap", "auto")
METHOD_LABELS = {"zero": "ZeroRouter", "knn": "K-NN", "kmeans": "UniRoute (K-means)",
                 "kmeans_shrunk": "UniRoute (K-means, count-aware Psi)", "learnedmap": "UniRoute (LearnedMap)",
                 "auto": "auto (what the build serves)"}


def _stamp(result: dict[str, Any], name: str) -> str:
    s = result[name]
    load = f"load average {s['load_average_before'][0]} before, {s['load_average_after'][0]} after"
    return f"`{s['command']}`, {s['started']}, {load}"


def _machine(result: dict[str, Any]) -> str:
    m = result["machine"]
    return (f"{m['cpu']}, {m['affinity_cpus']} cores, {m['memory_gb']} GB, Python {m['python']}, torch "
            f"{m['versions'].get('torch')}, commit {m['git_commit'][:10]}")


def speed_table(result: dict[str, Any]) -> list[str]:
    """One row per embedder: speed against bare sentence-transformers and agreement with minilm."""
    figures = result_figures(result, "throughput")
    if figures is None:
        return ["(throughput not measured yet)"]
    bare = figures["bare-sentence-transformers"]
    build = result_figures(result, "build") or {}
    route = result_figures(result, "route") or {}
    lines = [
        "| embedder | prompts/s | × bare sentence-transformers | cosine to `minilm` (mean / min) | same nearest "
        "neighbour | pairwise-similarity Spearman | build once (s) | cold process: load + embed 2 prompts (s) |",
        "|---|---:|---:|---|---:|---:|---:|---:|",
        f"| bare `SentenceTransformer.encode` | {bare['prompts_per_s']} | 1.00 | | | | | |",
    ]
    for label, row in figures.items():
        if label == "bare-sentence-transformers":
            continue
        cosine = row.get("cosine_to_minilm")
        cos_text = f"{cosine['mean']:.4f} / {cosine['min']:.4f}" if cosine else f"n/a ({row['dim']}-d space)"
        built = build.get(label, {}).get("seconds", "")
        cold = route.get(label)
        cold_text = f"{cold['process_seconds']} (load {cold['load_seconds']})" if cold else ""
        lines.append(f"| `{label}` | {row['prompts_per_s']} | {row['speedup_vs_bare']:.2f} | {cos_text} | "
                     f"{row['same_nearest_neighbour']:.3f} | {row['pairwise_similarity_spearman']:.3f} | {built} | "
                     f"{cold_text} |")
    return lines


def _names(result: dict[str, Any]) -> list[str]:
    return list(next(iter(result_figures(result, "routing").values()))["embedders"])


def routing_table(result: dict[str, Any]) -> list[str]:
    """Per dataset and method: each embedder's mean Area, with its sign test against the best one of the row."""
    figures = result_figures(result, "routing")
    if figures is None:
        return ["(routing not measured yet)"]
    names = _names(result)
    lines = ["| dataset | method | trials (" + " / ".join(f"`{n}`" for n in names) + ") | " +
             " | ".join(f"`{n}`" for n in names) + " |", "|---|---|---|" + "---:|" * len(names)]
    for dataset, block in figures.items():
        counts = " / ".join(str(row["trials"]) if row else "-" for row in block["embedders"].values())
        for method, label in METHOD_LABELS.items():
            versus = block["vs_best"].get(method, {"best": None, "tests": {}})
            if versus["best"] is None:  # no embedder measured with this method here
                continue
            cells = []
            for name in names:
                row = block["embedders"][name]
                if row is None or method not in row["area"]:
                    cells.append("not measured")
                    continue
                test = versus["tests"].get(name)
                if name == versus["best"]:
                    mark = " (best)" if len(versus["tests"]) else ""
                elif test["wins"] + test["losses"] == 0:
                    mark = f" (tied in all {test['trials']})"
                else:
                    mark = f" ({test['wins']}-{test['losses']} of {test['trials']}, p = {test['p']:.2g}"
                    mark += ", **significantly worse**)" if _loses(test) else ")"
                cells.append(f"{row['area'][method]:.4f}{mark}")
            lines.append(f"| {dataset} | {label} | {counts} | " + " | ".join(cells) + " |")
    return lines


def sources(result: dict[str, Any]) -> list[str]:
    """Which saved evaluation each column of a dataset comes from, with its embedder id (builds differ)."""
    figures = result_figures(result, "routing")
    if figures is None:
        return []
    lines = ["", "Sources (the file and the embedder id of each result; `static` builds of one recipe differ in "
             "their fingerprint, `static-tuned`'s names what it was fitted on, and `minilm-onnx`'s is the README's "
             "quality run from before the hierarchy became `auto`'s default kind, so that every embedder here is "
             "measured with the same `auto`, decision 0006):"]
    for dataset, block in figures.items():
        found = [f"`{n}` {row['file']} ({row['trials']} trials, `{row['embedder_id'].rsplit(':', 1)[-1]}`)"
                 for n, row in block["embedders"].items() if row is not None]
        lines.append(f"- {dataset}: " + "; ".join(found) + ".")
    return lines


def _loses(test: dict[str, Any] | None) -> bool:
    return bool(test) and test["p"] < ALPHA and test["losses"] > test["wins"]


def significant_losses(result: dict[str, Any], name: str,
                       methods: tuple[str, ...] = ROUTING_METHODS) -> list[str]:
    """Where an embedder's Area is significantly below the best measured one's: 'dataset/method ...' strings."""
    losses = []
    for dataset, block in result_figures(result, "routing").items():
        for method in methods:
            versus = block["vs_best"].get(method, {"tests": {}})
            if _loses(test := versus["tests"].get(name)):
                losses.append(f"{dataset}/{method} {test['wins']}-{test['losses']} of {test['trials']} against "
                              f"`{versus['best']}` (p = {test['p']:.2g})")
    return losses


def unmeasured(result: dict[str, Any], name: str) -> list[str]:
    """Datasets where the embedder has no routing result yet."""
    return [dataset for dataset, block in result_figures(result, "routing").items() if block["embedders"][name] is None]


def _build_rank(speed: dict[str, Any], name: str) -> tuple[float, bool]:
    """Sort key, fastest build first: prompts/s of what a build embeds its prompts with, teacher-bound last.

    A build on an embedder fitted to a teacher's vectors (`static-tuned`: `minilm-onnx`'s, embed.kinds) first embeds
    every prompt text the store has seen through the teacher, so it runs at the teacher's rate at best (plus the
    fit), whatever its rate once fitted, and ranks just after its teacher."""
    teacher = embedder_kind(name).teacher
    return -speed[teacher or name]["prompts_per_s"], teacher is not None


def fastest_without_loss(result: dict[str, Any], methods: tuple[str, ...] = ROUTING_METHODS) -> str | None:
    """The significance reading of docs/decisions/0001-build-embedder-default.md, shown beside the share-of-gap rule
    (fastest_within_share): the fastest embedder measured on every dataset whose Area is nowhere significantly below
    the best measured embedder's for these methods (None when no embedder qualifies yet)."""
    speed, routing = result_figures(result, "throughput"), result_figures(result, "routing")
    if speed is None or routing is None:
        return None
    names = sorted(_names(result), key=lambda n: _build_rank(speed, n))
    return next((n for n in names if not (significant_losses(result, n, methods) or unmeasured(result, n))), None)


def fastest(result: dict[str, Any]) -> str | None:
    """The fastest routed embedder that needs no fit (the interactive default)."""
    speed, routing = result_figures(result, "throughput"), result_figures(result, "routing")
    if speed is None or routing is None:
        return None
    return max((n for n in _names(result) if n in speed), key=lambda n: speed[n]["prompts_per_s"])


def fastest_within_share(result: dict[str, Any], shares: dict[str, dict[str, Any]] | None = None) -> str | None:
    """The build default by the share-of-gap rule (docs/decisions/0010-build-embedder-share-of-gap.md): the fastest
    embedder (a fitted one at its teacher's rate, after it) whose served router loses at most SHARE_LIMIT of the
    ZeroRouter-to-MLP gap to the best measured embedder on every dataset (None when none qualifies yet)."""
    speed, routing = result_figures(result, "throughput"), result_figures(result, "routing")
    if speed is None or routing is None:
        return None
    shares = served_shares(result) if shares is None else shares
    names = sorted(_names(result), key=lambda n: _build_rank(speed, n))
    return next((n for n in names if not gap_losses(shares, n)), None)


def _build_rate(speed: dict[str, Any], name: str) -> str:
    teacher = embedder_kind(name).teacher
    rate = speed[teacher or name]["prompts_per_s"]
    return f"{rate} (its teacher `{teacher}`'s)" if teacher else str(rate)


def frontier_table(result: dict[str, Any], shares: dict[str, dict[str, Any]]) -> list[str]:
    """Per embedder, fastest build first: its build rate against its served router's share of the gap below the
    best embedder per dataset (paired mean +- standard error, wins-losses), and the rule's verdict."""
    speed = result_figures(result, "throughput")
    if speed is None or not shares:
        return ["(speed or routing not measured yet)"]
    lines = ["| embedder | build prompts/s | " + " | ".join(shares) + f" | within {SHARE_LIMIT:.0%} everywhere |",
             "|---|---:|" + "---:|" * len(shares) + "---|"]
    for name in sorted(_names(result), key=lambda n: _build_rank(speed, n)):
        cells = []
        for block in shares.values():
            row = block["shares"].get(name)
            if block["best"] == name:
                cells.append("best")
            elif row is None:
                cells.append("not measured")
            else:
                cells.append(f"{row['share']:.1%} ± {row['se']:.1%} ({row['wins']}-{row['losses']} of "
                             f"{row['trials']})")
        verdict = "no" if gap_losses(shares, name) else "yes"
        lines.append(f"| `{name}` | {_build_rate(speed, name)} | " + " | ".join(cells) + f" | {verdict} |")
    lines += ["", "The gap per dataset (mean MLP minus ZeroRouter Area over the trials paired; the best embedder's own "
              "where its run measured MLP, else the build default's run, the README's quality run as the study "
              "measured it, on the same splits):"]
    for dataset, block in shares.items():
        if gaps := sorted({row["gap"] for row in block["shares"].values()}):
            lines.append(f"- {dataset}: {' / '.join(f'{g:.4f}' for g in gaps)} Area, from `{block['gap_from']}`'s "
                         f"run (best: `{block['best']}`); {SHARE_LIMIT:.0%} of it is {SHARE_LIMIT * gaps[0]:.4f} Area.")
    return lines


def frontier_plot(result: dict[str, Any], path: Path = FRONTIER_PLOT) -> Path | None:
    """The frontier as a PNG beside the page: build prompts/s (log) against share of the gap, one series per dataset."""
    speed, shares = result_figures(result, "throughput"), served_shares(result)
    if speed is None or not shares:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = _names(result)
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for i, dataset in enumerate(shares):
        points = []
        for n in names:
            if (share := share_below_best(shares, n, dataset)) is None:
                continue
            teacher = embedder_kind(n).teacher
            # Datasets side by side, and a fitted embedder just right of its teacher (they share a build rate).
            x = speed[teacher or n]["prompts_per_s"] * (1 + 0.06 * (i - 1)) * (1.3 if teacher else 1.0)
            se = shares[dataset]["shares"].get(n, {}).get("se", 0.0)
            points.append((x, 100 * share, 100 * se, n))
        ax.errorbar([p[0] for p in points], [p[1] for p in points], yerr=[p[2] for p in points], fmt="o",
                    capsize=3, label=dataset)
        for x, y, _, n in points:
            if i == 0:
                ax.annotate(n, (x, y), textcoords="offset points", xytext=(4, 6), fontsize=8)
    ax.axhline(100 * SHARE_LIMIT, color="grey", linestyle="--", linewidth=1)
    ax.set_xscale("log")
    ax.set_xlabel("build prompts/s, one thread (a fitted embedder at its teacher's, drawn right of it)")
    ax.set_ylabel("served router's loss to the best embedder,\n% of the ZeroRouter-to-MLP gap")
    ax.set_title(f"Speed against routing loss, ± 1 standard error (dashed: the {SHARE_LIMIT:.0%} limit)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# The significance reading judges what builds serve (`auto`): one sign test per dataset. Over every kind it would be 15
# uncorrected tests per embedder, about a 14% chance of a false "significantly below" each, and with all four
# embedders at 100 trials it gave the same model opposite verdicts (`minilm` passed, its int8 graph `minilm-onnx`
# failed on one LearnedMap row where both are level with each other). The per-kind losses are listed below the rule.
RULE_METHODS = (SERVED,)


def _share_resolution(shares: dict[str, dict[str, Any]]) -> tuple[float, float] | None:
    """(smallest, largest) standard error of a served-router share of the gap on the page."""
    ses = [row["se"] for block in shares.values() for row in block["shares"].values()]
    return (min(ses), max(ses)) if ses else None


def decision(result: dict[str, Any], shares: dict[str, dict[str, Any]] | None = None) -> list[str]:
    """The rule, its outcome, the significance reading beside it, and what is missing or lost per embedder."""
    shares = served_shares(result) if shares is None else shares
    choice, quick = fastest_within_share(result, shares), fastest(result)
    if quick is None:
        return []
    lines = ["", "The rule for the build default ([decisions/0010](../decisions/0010-build-embedder-share-of-gap.md), "
             "issue 42): the fastest embedder whose served router (`auto`) loses at most "
             f"{SHARE_LIMIT:.0%} of the ZeroRouter-to-MLP gap to the best measured embedder on every dataset (paired "
             "mean Area difference over the trials both have; a fitted embedder ranks at its teacher's build rate, "
             "after it). Here: " + (f"**`{choice}`**." if choice else "none qualifies yet (see the table).")]
    if choice and choice != quick:
        lines += [f"`{quick}` is the fastest but does not qualify: it stays the interactive default "
                  f"(`UNIROUTE_EMBEDDER`)."]
    if choice and choice != DEFAULT_BUILD_EMBEDDER:
        lines += [f"**Not switched yet**: the code's build default is still `{DEFAULT_BUILD_EMBEDDER}` "
                  f"(`uniroute/settings.py`, `DEFAULT_BUILD_EMBEDDER`); {PENDING_SWITCH}"]
    speed = result_figures(result, "throughput") or {}
    for name in sorted(_names(result), key=lambda n: _build_rank(speed, n)):
        if name != choice and (losses := gap_losses(shares, name)):
            lines += [f"- `{name}` loses more than {SHARE_LIMIT:.0%} of the gap on: {', '.join(losses)}."]
    if resolution := _share_resolution(shares):
        lines += ["", f"Resolution: the standard error of a share above is {resolution[0]:.1%} to "
                  f"{resolution[1]:.1%} of the gap, so the {SHARE_LIMIT:.0%} limit is within about one standard error "
                  "and the best embedder is picked on the same noisy trials: the rule reads point estimates, and "
                  "embedders this close can trade places between runs of 100 trials."]
    significance = fastest_without_loss(result, RULE_METHODS)
    lines += ["", "Beside it, the significance reading of "
              "[decisions/0001](../decisions/0001-build-embedder-default.md) "
              f"(not significantly below the best on `{SERVED}`, paired sign test at {ALPHA}, on any dataset) names "
              + (f"`{significance}`." if significance else "none.")]
    every_kind = fastest_without_loss(result, ROUTING_METHODS)
    if every_kind != significance:  # say what the stricter reading gives, and why it is not the rule
        lines += [f"Over every router kind ({', '.join(ROUTING_METHODS)}) the same reading would name "
                  f"`{every_kind}`; that is {len(ROUTING_METHODS) * len(result_figures(result, 'routing'))} "
                  "uncorrected "
                  "tests per embedder, which flag an embedder level with the best about one time in seven. The "
                  "per-kind significant losses:"]
    for name in _names(result):
        if losses := significant_losses(result, name):
            lines += [f"- `{name}` is significantly below the best on: {'; '.join(losses)}."]
        if missing := unmeasured(result, name):
            lines += [f"- `{name}` is not measured on: {', '.join(missing)}"
                      + (MINILM_UNMEASURED if name == "minilm" else ".")]
    return lines


# Why the code's build default may trail the rule's choice for a while: the README's quality table
# (docs/results.md, tools/pages/results_doc.py) is measured on the build default, every method including the
# clairvoyant oracles at 100 trials per dataset, so the two move together.
PENDING_SWITCH = ("the switch waits for the README's quality table (every method, 100 trials per dataset) measured on "
                  "the new default, so that the table keeps describing what builds serve.")

MINILM_UNMEASURED = (" (through torch it embeds ~2 prompts/s here, hours per dataset; `minilm-onnx`, the same model "
                     "in int8 with cosine 0.99 to it, stands in for it there, and the sign tests on those rows "
                     "compare `minilm-onnx` and `static` directly).")


def render(result: dict[str, Any]) -> str:
    """The whole page as Markdown."""
    parts = ["# Embedders side by side", "",
             "Generated by `tools/pages/embedders_table.py` from `benchmarks/results/embedding.json` "
             "(`python -m benchmarks.speed.embedding`); do not edit by hand.", ""]
    if "machine" in result:
        parts += [f"Machine: {_machine(result)}.", ""]
    parts += [
        "The embedders (`UNIROUTE_EMBEDDER`, `uniroute evaluate --embedder`; each has its own embedder id, so "
        "caches and routers never mix them):",
        "- `minilm`: all-MiniLM-L6-v2 through sentence-transformers and torch, the last 256 tokens of a prompt.",
        "- `minilm-onnx`: the same model and mean pooling exported once to ONNX (torch's exporter) and "
        "dynamically quantized to int8 with one scale per output channel (ONNX Runtime); the same WordPiece ids "
        "and left truncation to 256 tokens, tokenized by `tokenizers`, so encoding imports no torch. "
        "`minilm-onnx-f32` is the unquantized graph, measured as the exactness check.",
        "- `static`: a model2vec-style table distilled once from the local MiniLM (every vocabulary token through "
        "the model as `[CLS] token [SEP]`, PCA to 256 dimensions, SIF weights from Zipf ranks, as model2vec's "
        "`distill` does); a prompt is the normalised sum of its tokens' rows, all of its tokens. The "
        "distillation is our own code: model2vec's `distill` extra pins older transformers/tokenizers than "
        "sentence-transformers and Prefect need here.",
        "- `static-tuned`: `static`'s table fitted in closed form (ridge) so that a prompt's sum of rows matches "
        "`minilm-onnx`'s vector of it on the prompts it is fitted on (model2vec's \"tokenlearn\" idea; "
        "`uniroute/embed/static_tuned.py`): a build fits it on every prompt text its store has seen, an "
        "evaluation once on every prompt's text (no label, score or split enters the fit). Once fitted it embeds "
        "at `static`'s rate; its build first embeds those texts through `minilm-onnx`, so the rule below ranks it "
        "by its teacher's rate, after the teacher. It is not in the speed table (no vectors before a fit).",
        "Model files are made on first use in `$UNIROUTE_HOME/cache/embedders/` (copied from the ones `make env` "
        "built, else built) and reused; their fingerprint is part of the id.", ""]
    parts += ["## Speed and agreement with `minilm`", ""]
    if "throughput" in result:
        repeats = result["throughput"].get("repeats")
        parts += [f"{result['prompts']}; one thread for torch and ONNX Runtime, medians of {repeats} alternating "
                  f"passes. Measured by {_stamp(result, 'throughput')}.",
                  "", "Speed-up is bare time / embedder time. Cosine is only defined where the embedder shares "
                  "`minilm`'s 384-d space; nearest-neighbour agreement and the Spearman correlation of pairwise "
                  "similarities (20,000 random pairs) compare any two embedders. Building and the cold process "
                  "were measured by " + ", ".join(_stamp(result, s) for s in ("build", "route") if s in result) + ".",
                  ""]
    parts += speed_table(result)
    if build := result_figures(result, "build"):
        same = ", ".join(f"`{n}` {'yes' if b['same_file_as_home_cache'] else 'no'}" for n, b in build.items())
        parts += ["", "Rebuilt in a fresh folder (this benchmark's thread settings), is the model file bit-identical "
                  f"to the one in the cache the evaluations used? {same}. Where it is not, the fingerprint in the "
                  "id differs, and routers fitted on the other build refuse its vectors."]
    parts += ["", "## Routing Area per embedder", ""]
    if "routing" in result:
        r = result["routing"]
        parts += [f"`uniroute evaluate`, seed {r['seed']}, methods {', '.join(r['methods'])}; trial t is the same "
                  "split for every embedder, so runs of different lengths are paired over the trials both have "
                  "(the trials column: each embedder's count). RouterBench embeds the last block of each prompt. "
                  "Each Area is the mean over the embedder's own trials; in brackets: wins-losses of the embedder "
                  "against the best measured one of the row (highest mean Area over the trials all of them have) "
                  f"over the paired trials, two-sided sign test, significant at {ALPHA}. Collected by "
                  f"{_stamp(result, 'routing')}.", ""]
    parts += routing_table(result)
    parts += sources(result)
    parts += ["", "## The build default: speed against the served router's loss", "",
              "Per embedder, fastest build first: the rate its build embeds at (a fitted embedder at its teacher's, "
              "from the speed table) against how much less Area its served router (`auto`) has than the best "
              "measured embedder's on each dataset, as a share of that dataset's ZeroRouter-to-MLP gap: paired mean "
              "± standard error over the trials both have, wins-losses against the best. Plotted in "
              f"[{FRONTIER_PLOT.name}]({FRONTIER_PLOT.name}).", ""]
    shares = served_shares(result)
    parts += frontier_table(result, shares)
    parts += decision(result, shares)
    parts += candidates_section()
    return "\n".join(parts) + "\n"

def write_table(result: dict[str, Any], page: Path = PAGE) -> Path:
    """Write the page generated from a result dict; returns its path."""
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(render(result))
    frontier_plot(result, page.with_name(FRONTIER_PLOT.name))
    return page


if __name__ == "__main__":
    print(write_table(json.loads(RESULTS.read_text())))
