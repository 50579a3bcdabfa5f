"""Decision records: every serving path (uniroute route, route --file, the MLflow pyfunc, the Python API) records
each routed prompt to the spool, and `uniroute inbox` lands each exactly once in routing_decisions."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from uniroute import operations, store
from uniroute.cli import app
from uniroute.operations.context import Context
from uniroute.pipeline.serving import route as serving
from uniroute.pipeline.serving.records import Recording, embedding_of
from uniroute.pipeline.serving.route import RoutingRequest
from uniroute.pipeline.tracking.pyfunc import router_model_class, served_spool
from uniroute.settings import Settings

runner = CliRunner()


def _sql(home: Path, sql: str) -> pd.DataFrame:
    with store.opened(home / "uniroute.duckdb", read_only=True) as con:
        return con.execute(sql).df()


def _served_model(home: Path, settings: Settings):
    """The pyfunc class MLflow serves, holding the champion and its embedder, recording as a server would."""
    source = serving.routing_source(home / "uniroute.duckdb", home / "published")
    model = router_model_class()()
    model.router, model.embedder, model.router_id = source.router, source.embedder(), source.router_id
    model.X_val = None
    model.spool, model.recording = served_spool(settings)
    return model


def test_every_serving_path_lands_in_routing_decisions_exactly_once(traffic_home, prompts, tmp_path):
    settings = Settings(home=traffic_home, mlflow=False)
    cli = runner.invoke(app, ["route", *prompts[:10], "--json"], catch_exceptions=False)
    assert cli.exit_code == 0, cli.output
    ids = {"cli": [r["decision_id"] for r in json.loads(cli.stdout)]}
    batch = tmp_path / "prompts.jsonl"
    batch.write_text("".join(json.dumps({"n": i, "prompt": f"{prompts[i % len(prompts)]} {i}"}) + "\n"
                             for i in range(1000)))
    file = runner.invoke(app, ["route", "--file", str(batch), "--lambda", "0"], catch_exceptions=False)
    assert file.exit_code == 0, file.output
    ids["file"] = [json.loads(line)["decision_id"] for line in file.stdout.splitlines()]
    model = _served_model(traffic_home, settings)
    served = [model.predict(None, pd.DataFrame({"prompt": prompts[i:i + 50]}), params={}) for i in range(0, 200, 50)]
    ids["pyfunc"] = [d for frame in served for d in frame.decision_id]
    model.spool.close()  # what the size/time rotation (or a clean stop) does
    api = operations.route(Context.of(settings), prompts[:3], RoutingRequest(budget=0.5))
    ids["api"] = api.decisions.decision_id.tolist()
    assert {k: len(set(v)) for k, v in ids.items()} == {"cli": 10, "file": 1000, "pyfunc": 200, "api": 3}

    inbox = runner.invoke(app, ["inbox", "--no-onboard"], catch_exceptions=False)
    assert inbox.exit_code == 0, inbox.output
    stored = _sql(traffic_home, "select decision_id, source, model, publication_version from routing_decisions")
    assert len(stored) == stored.decision_id.nunique() == 1213
    by_source = stored.groupby("source").decision_id.apply(set).to_dict()
    assert by_source == {k: set(v) for k, v in ids.items()}
    assert stored.loc[stored.source == "cli", "publication_version"].notna().all()
    assert stored.loc[stored.source == "pyfunc", "publication_version"].isna().all()  # a served model: none

    # Again, and with a finished file put back under another name: nothing lands twice.
    done = sorted((traffic_home / "spool" / "decisions" / "done").iterdir())
    shutil.copy(done[0], traffic_home / "spool" / "decisions" / "again.jsonl")
    assert runner.invoke(app, ["inbox", "--no-onboard"], catch_exceptions=False).exit_code == 0
    assert len(_sql(traffic_home, "select * from routing_decisions")) == 1213


def test_records_keep_the_embedding_and_no_prompt_text_unless_opted_in(traffic_home, prompts):
    settings = Settings(home=traffic_home, mlflow=False)
    plain = operations.route(Context.of(settings), prompts[:2], RoutingRequest(lam=0.0))
    kept = operations.route(Context.of(Settings(home=traffic_home, mlflow=False, record_prompts=True)), prompts[2:3],
                            RoutingRequest(lam=0.0))
    records = [json.loads(line) for path in (plain.recorded_to, kept.recorded_to)
               for line in path.read_text().splitlines()]
    assert [r["prompt"] for r in records] == [None, None, prompts[2]]
    assert all(prompts[0] not in json.dumps(r) for r in records[:2])
    source = serving.routing_source(traffic_home / "uniroute.duckdb", traffic_home / "published")
    X = source.embedder().encode(prompts[:2])
    assert np.allclose(embedding_of(records[0]["embedding"]), X[0], atol=1e-3)
    assert records[0]["schema_version"] == 1 and records[0]["propensity"] == 1.0 and records[0]["source"] == "api"
    # The record carries what `route --explain` ranks: the other candidates best first, the chosen one's expectations
    decided = plain.decisions.iloc[0]
    assert records[0]["model"] == decided["model"] and records[0]["fallbacks"] == list(decided["fallbacks"])
    assert sorted([records[0]["model"], *records[0]["fallbacks"]]) == sorted(source.pool)
    assert records[0]["expected_score"] == decided["expected_score"]
    assert records[0]["expected_cost"] == decided["expected_cost"]


def test_no_log_and_the_setting_turn_recording_off(traffic_home, prompts, monkeypatch):
    spool = traffic_home / "spool" / "decisions"
    assert runner.invoke(app, ["route", prompts[0], "--no-log"], catch_exceptions=False).exit_code == 0
    monkeypatch.setenv("UNIROUTE_RECORD_DECISIONS", "false")
    assert runner.invoke(app, ["route", prompts[0]], catch_exceptions=False).exit_code == 0
    assert served_spool(Settings(home=traffic_home, record_decisions=False))[0] is None
    assert not spool.exists() or not list(spool.iterdir())
    monkeypatch.delenv("UNIROUTE_RECORD_DECISIONS")
    assert runner.invoke(app, ["route", prompts[0]], catch_exceptions=False).exit_code == 0
    assert len(list(spool.glob("*.jsonl"))) == 1


def test_route_log_still_appends_to_routing_log(traffic_home, prompts):
    result = runner.invoke(app, ["route", *prompts[:2], "--log", "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert len(_sql(traffic_home, "select * from routing_log")) == 2
    assert len(list((traffic_home / "spool" / "decisions").glob("*.jsonl"))) == 1  # and recorded as well


def test_exploration_logs_the_probability_of_each_choice(traffic_home, prompts):
    settings = Settings(home=traffic_home, mlflow=False)
    ctx = Context.of(settings)
    always = Recording(explore_share=1.0, explore_margin=10.0, seed=1)  # every model is near-best: uniform
    routed = operations.route(Context(**{**ctx.__dict__, "recording": always}), prompts[:40], RoutingRequest(lam=0.0))
    records = [json.loads(line) for line in routed.recorded_to.read_text().splitlines()]
    pool = len(serving.routing_source(traffic_home / "uniroute.duckdb", traffic_home / "published").pool)
    assert all(r["explored"] for r in records)
    assert [r["propensity"] for r in records] == pytest.approx([1 / pool] * 40)
    assert len({r["model"] for r in records}) > 1
    never = operations.route(ctx, prompts[:40], RoutingRequest(lam=0.0))
    best = never.decisions.model.tolist()
    half = Recording(explore_share=0.5, explore_margin=10.0, seed=2)
    mixed = operations.route(Context(**{**ctx.__dict__, "recording": half}), prompts[:40], RoutingRequest(lam=0.0))
    for record, model in zip((json.loads(x) for x in mixed.recorded_to.read_text().splitlines()), best, strict=True):
        expected = 0.5 / pool + (0.5 if record["model"] == model else 0.0)
        assert record["propensity"] == pytest.approx(expected)
