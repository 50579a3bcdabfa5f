"""The paper's further experiments on the shared datasets, and the Markdown page that reports them.

`run` executes every experiment below in turn (20 trials, seed 0, the `static` embedder, the default, which
matched MiniLM's routing Area within noise at a fraction of its CPU; one at a time, since they are CPU-heavy),
writing JSON and PNG files into docs/results/ and its intermediate files (arena-style battles,
rule-made attribute labels) under $UNIROUTE_HOME/paper_extensions/, and records wall times and the machine's
load in docs/results/paper_extensions_runs.json. `markdown` writes docs/results/paper_extensions.md from those
files: nothing in it is typed by hand.

Run: `UNIROUTE_HOME=.uniroute OMP_NUM_THREADS=1 .venv/bin/python -m benchmarks.paper_extensions run [--only NAME]`
then `.venv/bin/python -m benchmarks.paper_extensions markdown`.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS = Path("docs/results")
PAGE = REPO / "docs" / "results" / "paper_extensions.md"
RUNS = REPO / RESULTS / "paper_extensions_runs.json"
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
    "attribute_labels": ["python:benchmarks.attribute_rules", "--data", f"{SHARED}/routerbench_subset",
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


def run(only: list[str] | None) -> None:
    """Run the experiments one after another; record wall time and load average of each."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
           "MKL_NUM_THREADS": "1"}
    home = Path(env.setdefault("UNIROUTE_HOME", str(REPO / ".uniroute"))).resolve()
    (home / "paper_extensions").mkdir(parents=True, exist_ok=True)
    runs = json.loads(RUNS.read_text()) if RUNS.exists() else {}
    for name, argv in EXPERIMENTS.items():
        if only and name not in only:
            continue
        args = [a.replace("$UNIROUTE_HOME", str(home)) for a in argv]
        command = ([sys.executable, "-m", args[0].split(":", 1)[1], *args[1:]] if args[0].startswith("python:")
                   else [str(REPO / ".venv" / "bin" / "uniroute"), *args])
        print(f"== {name}: {shown(argv)}", flush=True)
        load_before, started = os.getloadavg(), time.perf_counter()
        code = subprocess.call(command, cwd=REPO, env=env)
        runs[name] = {"command": shown(argv), "exit": code, "seconds": round(time.perf_counter() - started, 1),
                      "load_average_before": [round(x, 2) for x in load_before],
                      "load_average_after": [round(x, 2) for x in os.getloadavg()], "cpu_count": os.cpu_count(),
                      "finished": time.strftime("%Y-%m-%d %H:%M:%S")}
        RUNS.write_text(json.dumps(runs, indent=1) + "\n")
        print(f"== {name}: exit {code} after {runs[name]['seconds']:.0f} s", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("run", "markdown"))
    parser.add_argument("--only", nargs="*", help="run only these experiments")
    args = parser.parse_args()
    if args.action == "run":
        run(args.only)
    else:
        from benchmarks.paper_extensions_page import page

        PAGE.write_text(page(REPO, EXPERIMENTS, json.loads(RUNS.read_text()) if RUNS.exists() else {}))
        print(f"wrote {PAGE}")


if __name__ == "__main__":
    main()
