"""The paper's further experiments: each one's command (pairwise preferences, battle density, transfer, prompt
attributes, LLM similarity), as `extensions run` executes it and tools/pages/paper_extensions.py prints it."""

from __future__ import annotations

import shlex
from pathlib import Path

RESULTS = Path("docs/results")  # relative to the repository: the commands are shown as run from there
SHARED = "../shared/datasets"
WORK = "$UNIROUTE_HOME/paper_extensions"
EMBEDDER = "static"
COMMON = ["--trials", "20", "--seed", "0", "--embedder", EMBEDDER]
STEM = "biology,chemistry,computer science,engineering,math,physics"
HUMANITIES = "business,economics,health,history,law,other,philosophy,psychology"
PAIRWISE_DATASETS = (("routerbench_subset", "last-block"), ("mmlu_pro_cot29", "full"), ("routerdc_model7", "full"))
# Battle density study: battles per prompt at ceil(M/4) and floor(M/2) of each dataset's M LLMs with costs (11, 27
# and 7; the page checks M against each report), 1 being the runs above. Small datasets first.
DENSITIES = {"routerbench_subset": (3, 5), "routerdc_model7": (2, 3), "mmlu_pro_cot29": (7, 13)}

# name -> argv (after `uniroute`, or a python module for the label rules); `$UNIROUTE_HOME` is expanded.
EXPERIMENTS: dict[str, list[str]] = {
    "similarity_mmlu": ["report", "--similarity", f"{RESULTS}/similarity_mmlu_pro_cot29.png", "--data",
                        f"{SHARED}/mmlu_pro_cot29", "--k", "20", "--embedder", EMBEDDER],
    **{f"pairwise_{name}": ["evaluate", "--data", f"{SHARED}/{name}", *COMMON, "--prompt-part", part,
                            "--methods", "zero,kmeans,pairwise", "--out", f"{RESULTS}/pairwise_{name}.json"]
       for name, part in PAIRWISE_DATASETS},
    **{f"pairwise_{name}_b{n}": ["evaluate", "--data", f"{SHARED}/{name}", *COMMON, "--prompt-part",
                                 dict(PAIRWISE_DATASETS)[name], "--methods", "zero,kmeans,pairwise",
                                 "--battles-per-prompt", str(n), "--out", f"{RESULTS}/pairwise_{name}_b{n}.json"]
       for name, densities in DENSITIES.items() for n in densities},
    "mmlu_battles": ["arena-battles", "--data", f"{SHARED}/mmlu_pro_cot29", "--seed", "0",
                     "--out", f"{WORK}/mmlu_pro_cot29_battles.parquet"],
    "transfer_mmlu_pairwise": ["evaluate", "--data", f"{WORK}/mmlu_pro_cot29_battles.parquet",
                               "--train-benchmarks", STEM, "--test-data", f"{SHARED}/mmlu_pro_cot29",
                               "--test-benchmarks", HUMANITIES, *COMMON, "--methods", "zero,knn,kmeans",
                               "--out", f"{RESULTS}/transfer_mmlu_stem_to_humanities_pairwise.json"],
    "transfer_mmlu_pointwise": ["evaluate", "--data", f"{SHARED}/mmlu_pro_cot29", "--train-benchmarks", STEM,
                                "--test-data", f"{SHARED}/mmlu_pro_cot29", "--test-benchmarks", HUMANITIES, *COMMON,
                                "--methods", "zero,knn,kmeans,learnedmap",
                                "--out", f"{RESULTS}/transfer_mmlu_stem_to_humanities_pointwise.json"],
    "attribute_labels": ["python:benchmarks.paper.attribute_rules", "--data", f"{SHARED}/routerbench_subset",
                         "--out", f"{WORK}/routerbench_attribute_labels.csv"],
    **{f"attributes_routerbench_{embedder}": [
        "evaluate", "--data", f"{SHARED}/routerbench_subset", "--train-benchmarks", "arc-challenge,winogrande",
        "--test-data", f"{SHARED}/routerbench_subset", "--test-benchmarks", "mbpp", *COMMON[:4],
        "--embedder", embedder, *(["--attribute-labels", f"{WORK}/routerbench_attribute_labels.csv",
                                   "--attribute-base", EMBEDDER] if embedder == "attributes" else []),
        "--prompt-part", "last-block", "--methods", "zero,knn,kmeans",
        "--out", f"{RESULTS}/attributes_routerbench_to_mbpp_{embedder}.json"] for embedder in (EMBEDDER, "attributes")},
}


def shown(argv: list[str]) -> str:
    """The command as a user types it."""
    if argv[0].startswith("python:"):
        head = [".venv/bin/python", "-m", argv[0].split(":", 1)[1]]
        argv = argv[1:]
    else:
        head = ["uniroute"]
    return " ".join(f'"{a}"' if "$" in a else shlex.quote(a) for a in head + argv)  # "$X" so the shell expands
