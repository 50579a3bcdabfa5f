"""`make mutation` / `python -m tools.mutation [MODULE ...]`: run the core modules' mutants, one module at a
time, and write tools/mutation/results.json and the table in docs/results.md.

MODULES maps each core module to its FAST tests (seconds, no Prefect server, no shared datasets; options as
--name=value): a mutant is killed when one of them fails. A mutant that survives is either killed by a new test
in that module's test folder or written down in equivalent.json (module -> key -> why no behaviour can tell it
apart).
Score = killed / (mutants - equivalent). Modules not named keep their previous results in the JSON.
`--survivors` re-runs only the survivors recorded in the JSON (after adding tests, with the module unchanged);
`--rescore` only recounts them after equivalent.json changed.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path

from tools.mutation.runner import ModuleRun, run_module
from tools.pages import REPO
from tools.pages.readme_block import rewrite_block

RESULTS = Path(__file__).with_name("results.json")
EQUIVALENT = Path(__file__).with_name("equivalent.json")
DOC = REPO / "docs" / "results.md"

MODULES: dict[str, list[str]] = {
    "uniroute.routers.rule": [
        "tests/routers/test_rule.py",
        "tests/routers/test_rule_edges.py",
        "tests/routers/baselines/test_zero.py",
        "tests/routers/test_router.py",
        "tests/properties/test_routing_rule.py",
    ],
    "uniroute.routers.budgets.lambda_path": [
        "tests/routers/budgets/test_lambda_path.py",
        "tests/routers/budgets/test_lambda_path_groups.py",
        "tests/routers/test_rule.py",
        "tests/properties/test_routing_rule.py",
    ],
    "uniroute.routers.tables": [
        "tests/routers/test_tables.py",
        "tests/routers/test_tables_edges.py",
    ],
    "uniroute.routers.cluster.psi": [
        "tests/routers/cluster/test_psi.py",
        "tests/routers/cluster/test_psi_edges.py",
        "tests/routers/test_rule.py",
    ],
    # The guard-by-guard tests first (-x stops at the first failure); the 20 s memory-limit test is left out.
    "uniroute.store.sandbox": [
        "tests/store/test_sandbox_rules.py",
        "tests/robustness/test_sandbox_paths.py",
        "tests/sql/test_user_views.py",
        "tests/store/test_sql_stream.py",
        "tests/properties/test_sandbox.py",
        "--deselect=tests/robustness/test_sandbox_paths.py::",
        "test_a_query_over_the_memory_limit_on_the_snapshot_path_fails_in_one_line",
    ],
    "uniroute.pipeline.pool.onboard": [
        "tests/pipeline/pool/test_onboard_result.py",
        "tests/pipeline/pool/test_onboard.py",
        "tests/pipeline/pool/test_onboard_paths.py",
        "tests/pipeline/pool/test_onboard_embedding.py",
        "tests/pipeline/pool/test_onboard_refresh.py",
        "tests/pipeline/pool/test_battles.py",
        "--deselect=tests/pipeline/pool/test_battles.py::",
        "test_a_build_gives_battle_only_models_psi_rows_on_the_accuracy_scale",
    ],
    "uniroute.ingest.inbox": [
        "tests/ingest/test_inbox_parts.py",
        "tests/ingest/test_inbox.py",
        "tests/ingest/test_inbox_names.py",
        "tests/ingest/test_inbox_safety.py",
    ],
    # checked_rows on staged tables in memory: the file-to-store tests (test_bad_input, test_load, test_formats,
    # about 2 s per test) cover the same checks, but every surviving mutant would run all of them (3 min each).
    "uniroute.ingest.checks": [
        "tests/ingest/test_checks_rows.py",
    ],
    "uniroute.ingest.pairwise_checks": [
        "tests/ingest/test_pairwise_checks.py",
        "tests/ingest/test_pairwise.py",
        "tests/ingest/test_null_keys.py",
    ],
    "uniroute.pipeline.serving.publish": [
        "tests/pipeline/serving/test_publish_parts.py",
        "tests/pipeline/serving/test_snapshot.py",
    ],
    "uniroute.pipeline.reconcile": [
        "tests/pipeline/test_reconcile_parts.py",
        "tests/pipeline/test_reconcile_pool.py",
        "tests/pipeline/tracking/test_reconcile_mlflow.py",
    ],
    "uniroute.routers.budgets.cost_cap": [
        "tests/routers/budgets/test_cost_cap.py",
        "tests/routers/budgets/test_cost_cap_edges.py",
        "tests/routers/cluster/test_cluster_costs.py",
    ],
    "uniroute.pipeline.serving.calibration": [
        "tests/pipeline/traffic/test_calibration_window.py",
        "tests/pipeline/traffic/test_calibration_store.py",
        "tests/pipeline/traffic/test_budget_calibration.py",
        "tests/pipeline/serving/test_publish_parts.py",
    ],
}


def summarise(run: ModuleRun, equivalent: dict[str, str]) -> dict:
    """The module's counts and the survivors nobody explained (key, line, status)."""
    counts = {"mutants": len(run.outcomes), "killed": 0, "survived": 0, "equivalent": 0}
    survivors = []
    for o in run.outcomes:
        if o.status in ("killed", "timeout"):
            counts["killed"] += 1
        elif o.mutant.key in equivalent:
            counts["equivalent"] += 1
        else:
            counts["survived"] += 1
            survivors.append({"line": o.mutant.line, "key": o.mutant.key, "status": o.status})
    live = counts["mutants"] - counts["equivalent"]
    counts["score"] = round(counts["killed"] / live, 4) if live else 1.0
    return {**counts, "tests": MODULES[run.module], "baseline_seconds": run.baseline_seconds,
            "survivors": survivors}


def table(results: dict) -> str:
    lines = ["| module | mutants | killed | survived | equivalent | score |", "|---|---:|---:|---:|---:|---:|"]
    for module, r in results["modules"].items():
        lines.append(f"| `{module}` | {r['mutants']} | {r['killed']} | {r['survived']} | {r['equivalent']} | "
                     f"{r['score']:.1%} |")
    return "\n".join(lines) + "\n"


def rescore(results: dict, equivalent: dict) -> dict:
    """Counts again after equivalent.json changed: survivors now listed there count as equivalent (no run)."""
    for module, r in results["modules"].items():
        known = equivalent.get(module, {})
        moved = [s for s in r["survivors"] if s["key"] in known]
        r["survivors"] = [s for s in r["survivors"] if s["key"] not in known]
        r["survived"] -= len(moved)
        r["equivalent"] += len(moved)
        live = r["mutants"] - r["equivalent"]
        r["score"] = round(r["killed"] / live, 4) if live else 1.0
    return results


def main(argv: list[str]) -> None:
    if argv == ["--rescore"]:
        equivalent = json.loads(EQUIVALENT.read_text())
        results = rescore(json.loads(RESULTS.read_text()), equivalent)
        RESULTS.write_text(json.dumps(results, indent=1) + "\n")
        rewrite_block("mutation-table", table(results), DOC)
        return
    survivors_only = "--survivors" in argv
    argv = [a for a in argv if a != "--survivors"]
    names = argv or list(MODULES)
    unknown = [n for n in names if n not in MODULES]
    if unknown:
        raise SystemExit(f"unknown module(s) {unknown}; known: {list(MODULES)}")
    equivalent = json.loads(EQUIVALENT.read_text()) if EQUIVALENT.exists() else {}
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {"modules": {}}
    for name in names:
        try:
            previous = results["modules"].get(name) if survivors_only else None
            only = {s["key"] for s in previous["survivors"]} | set(equivalent.get(name, {})) if previous else None
            run = run_module(name, MODULES[name], report=lambda s: print(s, flush=True), only=only,
                             equivalent=frozenset(equivalent.get(name, {})))
        except SystemExit as failed:  # a module whose tests fail unmutated: say so, go on with the others
            print(failed, flush=True)
            continue
        results["modules"][name] = summarise(run, equivalent.get(name, {}))
        r = results["modules"][name]
        print(f"{name}: {r['killed']}/{r['mutants']} killed, {r['survived']} survived, {r['equivalent']} "
              f"equivalent, score {r['score']:.1%}", flush=True)
        # Re-read before writing: another run (of other modules) may have written since this one started.
        mine = results["modules"][name]
        results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {"modules": {}}
        results["modules"][name] = mine
        results["modules"] = {m: results["modules"][m] for m in MODULES if m in results["modules"]}
        results["generated"] = datetime.now(UTC).isoformat(timespec="seconds")
        RESULTS.write_text(json.dumps(results, indent=1) + "\n")
        rewrite_block("mutation-table", table(results), DOC)


if __name__ == "__main__":
    main(sys.argv[1:])
