"""`uniroute rollback`: the store's champion, the published tables and MLflow's champion alias move back together,
in one recorded operation; a version lacking a model added since is refused unless forced; doctor holds after."""

from __future__ import annotations

import json
from pathlib import Path

import mlflow
import pytest
from typer.testing import CliRunner

from tests.robustness.conftest import NEWCOMER, table_checksums
from tests.robustness.test_crashes import _assert_whole, _cli
from uniroute import store
from uniroute.cli import app
from uniroute.faults import CRASH_SIGNAL
from uniroute.pipeline.pool import registry
from uniroute.pipeline.serving import snapshot
from uniroute.pipeline.tracking import CHAMPION, REGISTERED_NAME
from uniroute.settings import Settings

runner = CliRunner()
PROMPTS = ["solve the equation for x", "write a short poem about rain", "which enzyme breaks down starch"]
RETIRED = "synth-llm-01"


def _run(*args: str, code: int = 0) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == code, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.stdout


def _champion(settings: Settings) -> str:
    with store.opened(settings.db_path, read_only=True) as con:
        return registry.load_champion(con).router_id


def _routed(*options: str) -> list[tuple[str, str]]:
    rows = json.loads(_run("route", *PROMPTS, "--lambda", "0.5", "--json", *options))
    return [(r["router_id"], r["model"]) for r in rows]


def _alias_router(settings: Settings) -> str:
    client = mlflow.MlflowClient(tracking_uri=settings.mlflow_uri, registry_uri=settings.mlflow_uri)
    return client.get_model_version_by_alias(REGISTERED_NAME, CHAMPION).tags["router_id"]


def _newcomer_results(settings: Settings, logs, folder: Path) -> Path:
    with store.opened(settings.db_path, read_only=True) as con:
        val = set(con.execute("select prompt_id from prompt_splits where split = 'val'").df().prompt_id)
    path = folder / "newcomer_val.csv"
    logs[(logs.model == NEWCOMER) & logs.prompt_id.isin(val)].drop(columns=["split"]).to_csv(path, index=False)
    return path


@pytest.mark.slow
def test_rollback_moves_the_champion_the_published_tables_and_the_alias_back_together(pool, monkeypatch):
    monkeypatch.setenv("UNIROUTE_EMBEDDER", "tfidf")
    first = _champion(pool)
    before = _routed("--pool", "synth-llm-00,synth-llm-02,synth-llm-03")  # the pool left after the retirement
    _run("retire", RETIRED)
    retired = _champion(pool)
    assert retired != first and _alias_router(pool) == retired

    done = json.loads(_run("rollback", "--json"))  # no version named: the champion before the current one
    assert (done["router_id"], done["from_router_id"], done["moved"]) == (first, retired, True)
    assert _champion(pool) == first
    assert snapshot.read_current(pool.published_dir).manifest["router_id"] == first
    assert RETIRED not in snapshot.read_current(pool.published_dir).manifest["pool"]  # retired stays retired
    assert _alias_router(pool) == first
    assert _routed() == before == [(first, model) for _, model in before]  # the first champion's decisions
    assert "ok" in _run("doctor", "--check")
    with store.opened(pool.db_path, read_only=True) as con:
        how = con.execute("select how from champion_history order by became_at desc limit 1").fetchone()[0]
        op = con.execute("select detail from operations where kind = 'rollback'").fetchall()
    assert how == "rollback" and op == [(f"rolled back the champion from {retired} to {first}",)]
    shown = _run("status")
    assert f"champion   {first} (" in shown and "rollback at" in shown and "last rollback succeeded" in shown

    again = _run("rollback", retired)  # a rollback can be undone the same way
    assert again.startswith(f"rolled back the champion from {first} to {retired}")
    assert _champion(pool) == retired == snapshot.read_current(pool.published_dir).manifest["router_id"]
    assert _alias_router(pool) == retired


def test_rolling_back_past_a_model_added_since_is_refused_unless_forced(pool, logs, tmp_path, monkeypatch):
    monkeypatch.setenv("UNIROUTE_EMBEDDER", "tfidf")
    monkeypatch.setenv("UNIROUTE_MLFLOW", "false")
    first = _champion(pool)
    _run("onboard", "--results", str(_newcomer_results(pool, logs, tmp_path)))
    onboarded = _champion(pool)
    unchanged = table_checksums(pool.db_path)

    refused = runner.invoke(app, ["rollback"])
    assert refused.exit_code == 1
    assert refused.stderr.strip().splitlines() == [
        f"error: {first} does not route {NEWCOMER}, added since; rolling back would take their traffic away: "
        "--force rolls back and onboards them onto it again"]
    checksums = table_checksums(pool.db_path)
    assert {t: checksums[t] for t in unchanged if t != "operations"} == \
        {t: unchanged[t] for t in unchanged if t != "operations"}
    assert _champion(pool) == onboarded

    forced = json.loads(_run("rollback", "--force", "--json"))
    assert forced["router_id"] == first and forced["missing"] == [NEWCOMER]
    child = _champion(pool)  # the newcomer onboarded onto the first champion's clusters: a child of it
    with store.opened(pool.db_path, read_only=True) as con:
        version = registry.load_router_version(con, child)
    assert child == forced["onboarded_router_id"] and version.parent_id == first
    assert NEWCOMER in version.router.models
    assert snapshot.read_current(pool.published_dir).manifest["router_id"] == child
    assert "ok" in _run("doctor", "--check")


def test_a_version_that_was_never_the_champion_or_does_not_exist_is_one_line(pool):
    with store.opened(pool.db_path, read_only=True) as con:
        candidate = con.execute("select router_id from routers where candidate_of is not null limit 1").fetchone()[0]
    unchanged = table_checksums(pool.db_path)
    for name, line in [
        (candidate, f"error: {candidate} was never the champion (a challenger or a candidate kind); rollback goes "
                    "back to an earlier champion only"),
        ("nope", "error: no router version 'nope' in the store (the champions so far: `uniroute sql \"select * "
                 "from champion_history\"`)"),
    ]:
        result = runner.invoke(app, ["rollback", name])
        assert result.exit_code == 1 and result.stderr.strip().splitlines() == [line], result.output
    only = runner.invoke(app, ["rollback"])  # one champion so far: nothing earlier
    assert only.exit_code == 1 and "no earlier champion to roll back to" in only.stderr
    checksums = table_checksums(pool.db_path)
    assert {t: checksums[t] for t in unchanged if t != "operations"} == \
        {t: unchanged[t] for t in unchanged if t != "operations"}
    current = _run("rollback", _champion(pool))
    assert current.strip() == f"{_champion(pool)} is the champion already; nothing to roll back"


@pytest.mark.slow
@pytest.mark.parametrize("point", ["publish:recorded", "publish:before-switch"])
def test_a_rollback_killed_before_or_after_its_commit_leaves_one_state_never_a_mix(pool, point):
    first = _champion(pool)
    assert _cli(pool, "retire", RETIRED).returncode == 0
    retired = _champion(pool)

    crashed = _cli(pool, "rollback", crash_at=point)
    assert crashed.returncode == -CRASH_SIGNAL, (crashed.returncode, crashed.stderr)  # killed by it
    # Before the commit nothing moved; after it the store's champion moved and the published tables follow it.
    assert _champion(pool) == (retired if point == "publish:recorded" else first)
    _assert_whole(pool)
    assert snapshot.read_current(pool.published_dir).manifest["router_id"] == _champion(pool)
    if point == "publish:recorded":  # the rerun does what the killed run did not
        assert _cli(pool, "rollback").returncode == 0 and _champion(pool) == first


def test_repeated_rollbacks_walk_back_and_a_named_version_still_jumps(pool, monkeypatch):
    monkeypatch.setenv("UNIROUTE_EMBEDDER", "tfidf")
    monkeypatch.setenv("UNIROUTE_MLFLOW", "false")
    first = _champion(pool)
    _run("retire", RETIRED)
    second = _champion(pool)
    _run("retire", "synth-llm-02")
    third = _champion(pool)
    assert len({first, second, third}) == 3
    assert _run("rollback").startswith(f"rolled back the champion from {third} to {second}")
    assert _run("rollback").startswith(f"rolled back the champion from {second} to {first}")  # not back to third
    assert _champion(pool) == first
    before = table_checksums(pool.db_path)
    refused = runner.invoke(app, ["rollback"])
    assert refused.exit_code != 0 and "no earlier champion to roll back to" in refused.output
    assert len(refused.output.strip().splitlines()) == 1
    after = table_checksums(pool.db_path)
    assert {t: v for t, v in after.items() if t != "operations"} == {t: v for t, v in before.items()
                                                                     if t != "operations"}
    assert _run("rollback", third).startswith(f"rolled back the champion from {first} to {third}")  # a jump
    assert _champion(pool) == third == snapshot.read_current(pool.published_dir).manifest["router_id"]
