"""The sequences users run, not only each step alone: onboard, build, route, onboard onto an onboarded router
with new prompts, retire, build again, publish: the pool stays buildable and routable throughout."""

from __future__ import annotations

import json

import pandas as pd
from typer.testing import CliRunner

from tests.robustness.conftest import NEWCOMER
from uniroute import store
from uniroute.cli import app
from uniroute.pipeline.pool import registry
from uniroute.pipeline.reconcile import reconcile

runner = CliRunner()


def _run(*args: str) -> str:
    result = runner.invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def _champion(db_path) -> registry.RouterVersion:
    with store.opened(db_path, read_only=True) as con:
        return registry.load_champion(con)


def test_onboard_build_route_onboard_retire_build_publish(pool, logs, tmp_path, monkeypatch):
    monkeypatch.setenv("UNIROUTE_MLFLOW", "false")
    monkeypatch.setenv("UNIROUTE_EMBEDDER", "tfidf")
    with store.opened(pool.db_path, read_only=True) as con:
        val = set(con.execute("select prompt_id from prompt_splits where split = 'val'").df().prompt_id)
    newcomer = logs[(logs.model == NEWCOMER) & logs.prompt_id.isin(val)].drop(columns=["split"])
    newcomer.to_csv(tmp_path / "newcomer.csv", index=False)

    # 1. a model with validation results only joins the pool
    _run("onboard", "--results", str(tmp_path / "newcomer.csv"))
    assert NEWCOMER in _champion(pool.db_path).router.models
    # 2. and the next build still works (it cannot score the newcomer on test prompts, and says whom it scored)
    built = json.loads(_run("build", "--json"))
    assert NEWCOMER in built["models"] and NEWCOMER not in built["roles"]["test"]
    assert set(built["metrics"]) == {"kmeans", "kmeans_shrunk", "learnedmap", "knn", "kmeans_hier", "zero"}
    # 3. routing with the fitted TF-IDF embedder of the build
    routed = json.loads(_run("route", "solve the quadratic equation", "what caused the revolution", "--json"))
    assert len(routed) == 2
    # 4. a model with new validation prompts, onboarded onto a router that is itself an onboarded child
    _run("onboard", "--results", str(tmp_path / "newcomer.csv"))  # nothing changes: already routable
    fresh = newcomer.head(30).assign(prompt_id=lambda f: "new-" + f.prompt_id,
                                     prompt=lambda f: f.prompt + " (a variant)", model="variant-llm")
    fresh.to_csv(tmp_path / "variant.csv", index=False)
    _run("onboard", "--results", str(tmp_path / "newcomer.csv"), "--results", str(tmp_path / "variant.csv"))
    child = _champion(pool.db_path)
    assert "variant-llm" in child.router.models and child.parent_id == built["router_id"]
    again = child.router.models
    more = fresh.assign(model="variant-2", score=1 - fresh.score)
    broken = fresh.head(2).assign(model="variant-bad", score=7)  # its rows are quarantined: said, not silent
    pd.concat([more, broken]).to_csv(tmp_path / "variant2.csv", index=False)
    partly = runner.invoke(app, ["onboard", "--results", str(tmp_path / "variant2.csv")], catch_exceptions=False)
    assert partly.exit_code == 0 and "onboarded variant-2" in partly.stdout, partly.output
    assert "variant2.csv: 2 rows quarantined, row 31: score 7.0 is outside [0, 1]" in partly.stderr
    assert _champion(pool.db_path).router.models == (*again, "variant-2")
    # 5. retire: gone from the champion, the published tables and --pool at once
    _run("publish")
    _run("retire", NEWCOMER)
    assert NEWCOMER not in _champion(pool.db_path).router.models
    refused = runner.invoke(app, ["route", "x", "--pool", NEWCOMER])
    assert refused.exit_code == 1 and "retired" in refused.stderr
    # 6. a build after all of it
    rebuilt = json.loads(_run("build", "--json"))
    assert NEWCOMER not in rebuilt["models"] and {"variant-llm", "variant-2"} <= set(rebuilt["models"])
    _run("publish")
    pool_now = json.loads(_run("sql", "select distinct model from current_routing_table", "--json"))
    assert NEWCOMER not in {row["model"] for row in pool_now}
    # 7. and the doctor finds nothing to repair
    with store.session(pool.db_path, "doctor") as s:
        report = reconcile(s, pool.published_dir, None, None, pool.inbox_dir, repair=False)
    assert all(f.status == "ok" for f in report.findings), report.lines()
    ops = pd.DataFrame(json.loads(_run("sql", "select kind, status from operations", "--json")))
    assert set(ops.status) == {"succeeded"}
