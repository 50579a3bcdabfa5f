"""Decision records under hostile and unlucky input: each bad record is quarantined with its reason in one line and
the good records of its file load; the spool takes decision records only; nothing a record holds (nor an older
bad row already stored) crashes the inbox, replay, the shadow gate, drift or the budget calibration."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import sys
import time
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from tests.robustness.conftest import table_checksums
from uniroute import operations, store
from uniroute.cli import app
from uniroute.ingest import inbox as inbox_module
from uniroute.operations.context import Context
from uniroute.pipeline.serving.calibration import TrafficWindow, traffic_calibration
from uniroute.pipeline.serving.route import RoutingRequest
from uniroute.pipeline.traffic.drift import DriftThresholds, check_drift
from uniroute.pipeline.traffic.replay import ReplaySetting, ReplayWindow, replay, replay_router
from uniroute.pipeline.traffic.shadow_config import ShadowConfig
from uniroute.pipeline.traffic.shadow_gate import shadow_gate
from uniroute.settings import Settings

runner = CliRunner()
SOON = (datetime.now(UTC) - timedelta(hours=1))


def _settings(pool: Settings, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("UNIROUTE_MLFLOW", "false")
    return Settings(home=pool.home, mlflow=False)


def _real_records(settings: Settings, prompts: list[str]) -> list[dict]:
    """Records the champion wrote for these prompts, read back and removed from the spool (templates)."""
    operations.route(Context.of(settings), prompts, RoutingRequest(lam=0.0))
    [path] = list(settings.spool_dir.glob("*.jsonl"))
    records = [json.loads(line) for line in path.read_text().splitlines()]
    path.unlink()
    return records


def _spooled(settings: Settings, name: str, lines: list[str]) -> Path:
    path = settings.spool_dir / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines))
    os.utime(path, (0, 0))  # written long ago: taken without the settle wait (its own test below)
    return path


def _sql(settings: Settings, sql: str) -> list[tuple]:
    with store.opened(settings.db_path, read_only=True) as con:
        return con.execute(sql).fetchall()


def _dump(record: dict) -> str:
    return json.dumps(record, separators=(",", ":"))


BAD = {  # case: (fields replaced in a real record, the reason quarantined)
    "decided_at not a time": ({"decided_at": "yesterday-ish"}, "decided_at must be an ISO 8601 time"),
    "embedding not base64": ({"embedding": "!!!not base64!!!"}, "embedding must be base64"),
    "cluster 9999": ({"cluster": 9999}, "cluster is outside the router's clusters"),
    "cluster -1": ({"cluster": -1}, "cluster is outside the router's clusters"),
    "embedding of the wrong size": ({"embedding": "AAAAAAAA", "embedding_dim": 4},
                                    "embedding_dim is not the router's embedding size"),
    "embedding_dim lies": ({"embedding_dim": 7}, "embedding_dim is not the router's embedding size"),
    "lam -3": ({"lam": -3, "setting": "lambda"}, r"lam must lie in \[0, 1e\+15\] \(-3\)"),
    "lam as text": ({"lam": "0"}, "lam must be a finite number"),
    "expected_score 7": ({"expected_score": 7}, r"expected_score must lie in \[0, 1\] \(7\)"),
    "expected_cost -5": ({"expected_cost": -5}, "expected_cost must lie in"),
    "expected_cost 1e308": ({"expected_cost": 1e308}, "expected_cost must lie in"),
    "unknown model": ({"model": "no-such-llm"}, "model is not a model the router routes"),
    "unknown router": ({"router_id": "no-such-router"}, "router_id is not a router version in this store"),
    "bidi in a model name": ({"model": "synth-llm-00\u202e"}, r"model holds the control .* U\+202E"),
    "control character in a fallback": ({"fallbacks": ["synth-llm-\x0701"]}, "fallbacks holds"),
    "decided in 2099": ({"decided_at": "2099-01-01T00:00:00"}, "decided_at lies outside"),
    "propensity 0": ({"propensity": 0}, r"propensity must lie in \(0, 1\]"),
    "source unknown": ({"source": "carrier-pigeon"}, "source must be one of"),
    "text_hash not a hash": ({"text_hash": "abc"}, "text_hash must be 64 lowercase hex digits"),
    "explored as text": ({"explored": "yes"}, "explored must be true or false"),
    "a list for a record": (None, r"not a decision record \(record='list'\)"),
}


@pytest.mark.parametrize("case", list(BAD), ids=list(BAD))
def test_a_bad_record_is_quarantined_and_the_good_ones_load(pool, logs, monkeypatch, case):
    settings = _settings(pool, monkeypatch)
    good, template = _real_records(settings, logs.prompt.unique()[:2].tolist())
    changes, reason = BAD[case]
    bad = "[1, 2]" if changes is None else _dump({**template, **changes})
    _spooled(settings, "decisions-mixed.jsonl", [_dump(good), bad])
    result = runner.invoke(app, ["inbox", "--no-onboard"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    [line] = [ln for ln in result.output.splitlines() if ln.startswith("decisions-mixed.jsonl")]
    assert "1 decisions accepted" in line and "1 rows quarantined" in line
    assert "first quarantined: line 2: " in line
    assert re.search(reason, line), line
    assert _sql(settings, "select decision_id from decisions") == [(good["decision_id"],)]
    [(number, why)] = _sql(settings, "select line_number, reason from decision_quarantine")
    assert number == 2 and re.search(reason, why)
    assert (settings.spool_dir / "done" / "decisions-mixed.jsonl").exists()


def test_a_time_offset_is_honoured(pool, logs, monkeypatch):
    settings = _settings(pool, monkeypatch)
    [record] = _real_records(settings, logs.prompt.unique()[:1].tolist())
    local = SOON.astimezone(timezone(timedelta(hours=2)))
    _spooled(settings, "decisions-tz.jsonl", [_dump({**record, "decided_at": local.isoformat()})])
    assert runner.invoke(app, ["inbox", "--no-onboard"], catch_exceptions=False).exit_code == 0
    [(stored,)] = _sql(settings, "select decided_at from decisions")
    assert stored == SOON.replace(tzinfo=None)  # stored in UTC, not 2 hours ahead


def test_one_id_with_two_contents_keeps_the_first_and_quarantines_the_second(pool, logs, monkeypatch):
    settings = _settings(pool, monkeypatch)
    [record] = _real_records(settings, logs.prompt.unique()[:1].tolist())
    other = {**record, "expected_score": 0.123}
    _spooled(settings, "decisions-twice.jsonl", [_dump(record), _dump(record), _dump(other)])
    assert runner.invoke(app, ["inbox", "--no-onboard"], catch_exceptions=False).exit_code == 0
    assert _sql(settings, "select count(*) from decisions") == [(1,)]
    [(number, reason)] = _sql(settings, "select line_number, reason from decision_quarantine")
    assert number == 3 and reason.startswith("decision_id repeats line 1's with other content")


def test_a_benchmark_log_in_the_spool_is_refused_never_training_data(pool, logs, monkeypatch, tmp_path):
    settings = _settings(pool, monkeypatch)
    before = table_checksums(settings.db_path)
    rows = logs.head(20).to_dict("records")
    path = _spooled(settings, "decisions-20261128.jsonl", [json.dumps(r) for r in rows])
    result = runner.invoke(app, ["inbox", "--no-onboard"], catch_exceptions=False)
    assert result.exit_code == 1
    assert "no line is a decision record" in result.output
    assert f"the reasons are in {settings.spool_dir / 'failed'}" in result.output  # not inbox/failed
    failed = settings.spool_dir / "failed" / path.name
    assert failed.exists() and "no line is a decision record" in Path(f"{failed}.reason.txt").read_text()
    after = table_checksums(settings.db_path)
    assert {t: after[t] for t in before if t != "operations"} == {t: v for t, v in before.items()
                                                                   if t != "operations"}


def test_a_stuck_processing_file_does_not_block_the_spool_or_the_inbox(pool, logs, monkeypatch, tmp_path):
    settings = _settings(pool, monkeypatch)
    [record] = _real_records(settings, logs.prompt.unique()[:1].tolist())
    stuck = settings.spool_dir / ".processing" / "decisions-stuck.jsonl"
    stuck.parent.mkdir(parents=True)
    stuck.write_text(_dump({**record, "decided_at": "not a time", "embedding": "???"}) + "\n")
    later = _spooled(settings, "decisions-later.jsonl", [_dump({**record, "decision_id": "later"})])
    benchmark = settings.inbox_dir / "more.parquet"
    benchmark.parent.mkdir(parents=True, exist_ok=True)
    logs.head(10).to_parquet(benchmark, index=False)
    status = runner.invoke(app, ["status"], catch_exceptions=False)
    assert "spool      1 decision file(s) waiting, 1 claimed by an interrupted run (.processing/)" in status.output
    check = runner.invoke(app, ["doctor", "--check"], catch_exceptions=False)
    assert "1 file(s) claimed by an interrupted inbox run (decisions-stuck.jsonl)" in check.output, check.output
    result = runner.invoke(app, ["inbox", "--no-onboard"], catch_exceptions=False)
    assert result.exit_code == 1, result.output  # the stuck file had nothing to land: failed, with its reason
    assert "decisions-stuck.jsonl: failed" in result.output and "decided_at must be" in result.output
    assert "see the decision_quarantine table" in result.output
    assert "decisions-later.jsonl: ingested" in result.output and "more.parquet: " in result.output
    assert not stuck.exists() and not later.exists() and not benchmark.exists()
    assert _sql(settings, "select decision_id from decisions") == [("later",)]


def test_a_content_error_past_the_checks_moves_the_file_aside(pool, logs, monkeypatch):
    """An error the checks do not foresee (injected here: DuckDB refusing a value) fails that one file, once."""
    settings = _settings(pool, monkeypatch)
    [record] = _real_records(settings, logs.prompt.unique()[:1].tolist())
    _spooled(settings, "decisions-a.jsonl", [_dump({**record, "decision_id": "a"})])
    _spooled(settings, "decisions-b.jsonl", [_dump({**record, "decision_id": "b"})])
    real = inbox_module.ingest_file

    def failing_on_a(con, path, **options):
        if Path(path).name == "decisions-a.jsonl":
            raise duckdb.ConversionException("Could not convert string 'x' to TIMESTAMP")
        return real(con, path, **options)

    monkeypatch.setattr(inbox_module, "ingest_file", failing_on_a)
    result = runner.invoke(app, ["inbox", "--no-onboard"], catch_exceptions=False)
    assert result.exit_code == 1
    assert "decisions-a.jsonl: failed" in result.output and "ConversionException" in result.output
    assert _sql(settings, "select decision_id from decisions") == [("b",)]
    assert not list((settings.spool_dir / ".processing").glob("*"))
    again = runner.invoke(app, ["inbox", "--no-onboard"], catch_exceptions=False)
    assert again.exit_code == 0 and "nothing waiting" in again.output


OLDER_BAD_ROWS = {  # stored before records were checked at ingest: what readers must survive
    "cluster 9999": "update decisions set cluster = 9999 where decision_id = 'r1'",
    "cluster -1": "update decisions set cluster = -1 where decision_id = 'r1'",
    "lam -3": "update decisions set lam = -3, setting = 'lambda' where decision_id = 'r1'",
    "lam NaN": "update decisions set lam = 'nan'::double, setting = 'lambda' where decision_id = 'r1'",
    "torn embedding": "update decisions set embedding = '\\x00\\x01'::blob where decision_id = 'r1'",
    "other embedding size": "update decisions set embedding = '\\x00\\x3c\\x00\\x3c'::blob, embedding_dim = 2 "
                            "where decision_id = 'r1'",
    "decided in 2099": "update decisions set decided_at = '2099-01-01' where decision_id = 'r1'",
}


@pytest.fixture(scope="module")
def old_rows_template(pool_template, tmp_path_factory) -> Path:
    """A copy of the pool with 40 routed decisions stored, the first renamed 'r1'; routed once per module."""
    home = tmp_path_factory.mktemp("old-rows")
    shutil.copytree(pool_template[0], home, symlinks=True, dirs_exist_ok=True)
    logs = pool_template[1]
    with pytest.MonkeyPatch.context() as env:
        env.setenv("UNIROUTE_HOME", str(home))
        settings = _settings(Settings(home=home), env)
        operations.route(Context.of(settings), logs.prompt.unique()[:40].tolist(), RoutingRequest())
        operations.inbox(Context.of(settings), onboard_landed=False)
    with store.opened(settings.db_path) as con:
        first = con.execute("select min(decision_id) from decisions").fetchone()[0]
        con.execute("update decisions set decision_id = 'r1' where decision_id = ?", [first])
    return home


@pytest.fixture
def traffic_with_old_rows(old_rows_template, tmp_path_factory, monkeypatch) -> Settings:
    """A private copy of the pool with its 40 stored decisions (each reader's test damages its own)."""
    home = tmp_path_factory.mktemp("old-rows")
    shutil.copytree(old_rows_template, home, symlinks=True, dirs_exist_ok=True)
    monkeypatch.setenv("UNIROUTE_HOME", str(home))
    return _settings(Settings(home=home), monkeypatch)


@pytest.mark.parametrize("case", list(OLDER_BAD_ROWS), ids=list(OLDER_BAD_ROWS))
def test_readers_survive_an_older_bad_row(traffic_with_old_rows, case):
    settings = traffic_with_old_rows
    with store.opened(settings.db_path) as con:
        con.execute(OLDER_BAD_ROWS[case])
    ctx = Context.of(settings)
    with ctx.session("replay", inputs=case) as s:
        using = replay_router(s.con, "champion")
        result, _ = replay(s.con, using, ReplayWindow(), ReplaySetting())
        assert result["overall"]["decisions"] >= 39
        gate = shadow_gate(s.con, using.router, ShadowConfig(min_decisions=10))
        assert gate.verdict in ("pass", "refuse"), gate.line
        drift = check_drift(s.con, DriftThresholds(min_decisions=10), now=datetime.now(UTC).replace(tzinfo=None))
        assert drift.decisions >= 39
        calibration = traffic_calibration(s.con, using.router.embedder_id, TrafficWindow(min_decisions=10))
        assert calibration.on_traffic and calibration.X.shape[0] >= 39
        s.con.execute("select 1").fetchall()  # the session's connection is still usable (no open result)


def test_sql_reads_no_embedding_nor_text_hash_of_a_routed_prompt(pool, logs, monkeypatch):
    settings = _settings(pool, monkeypatch)
    [record] = _real_records(settings, logs.prompt.unique()[:1].tolist())
    torn = _dump({"text_hash": record["text_hash"], **record})[:300]  # quarantined: its hash is not kept either
    _spooled(settings, "decisions-one.jsonl", [_dump(record), torn])
    assert runner.invoke(app, ["inbox", "--no-onboard"], catch_exceptions=False).exit_code == 0
    every = runner.invoke(app, ["sql", "select * from routing_decisions", "--json"], catch_exceptions=False)
    assert every.exit_code == 0 and record["decision_id"] in every.output
    quarantined = runner.invoke(app, ["sql", "select * from decision_quarantine", "--json"], catch_exceptions=False)
    assert quarantined.exit_code == 0 and "left out" in quarantined.output
    for output in (every.output, quarantined.output):
        assert record["text_hash"] not in output and record["embedding"][:40] not in output
    for sql in ("select text_hash from decisions", "select * from MAIN.\"decisions\" /* */",
                "select * from query_table('decisions')"):
        refused = runner.invoke(app, ["sql", sql])
        assert refused.exit_code == 2 and record["text_hash"] not in refused.output, refused.output


@pytest.mark.parametrize("where", ["spool", "inbox"])
def test_a_record_with_a_prompt_over_64_kb_loads(pool, logs, monkeypatch, where):
    settings = _settings(pool, monkeypatch)
    [record] = _real_records(settings, logs.prompt.unique()[:1].tolist())
    long = {**record, "prompt": "a long prompt \u2028 kept on purpose " * 5000}  # ~170 KB, a U+2028 inside
    folder = settings.spool_dir if where == "spool" else settings.inbox_dir
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "decisions-long.jsonl"
    path.write_text(json.dumps(long, ensure_ascii=False) + "\n" + _dump({**record, "decision_id": "next"}) + "\n")
    os.utime(path, (0, 0))  # settled long ago
    result = runner.invoke(app, ["inbox", "--no-onboard"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "2 decisions accepted" in result.output
    [(size,)] = _sql(settings, f"select length(prompt) from decisions where decision_id = '{record['decision_id']}'")
    assert size == len(long["prompt"])


def test_a_failing_file_with_a_long_name_gets_its_reason_file(pool, logs, monkeypatch):
    settings = _settings(pool, monkeypatch)
    name = "decisions-" + "x" * 230 + ".jsonl"  # 246 bytes: allowed, but not with ".reason.txt" after it
    _spooled(settings, name, [json.dumps(r) for r in logs.head(3).to_dict("records")])
    result = runner.invoke(app, ["inbox", "--no-onboard"], catch_exceptions=False)
    assert result.exit_code == 1 and "no line is a decision record" in result.output, result.output
    [reason] = list((settings.spool_dir / "failed").glob("*.reason.txt"))
    [moved] = [p for p in (settings.spool_dir / "failed").iterdir() if p != reason]
    assert reason.name == moved.name + ".reason.txt" and moved.name.endswith(".jsonl")
    assert "no line is a decision record" in reason.read_text()


def test_a_stored_decision_id_given_other_content_is_quarantined(pool, logs, monkeypatch):
    settings = _settings(pool, monkeypatch)
    [record] = _real_records(settings, logs.prompt.unique()[:1].tolist())
    _spooled(settings, "decisions-first.jsonl", [_dump(record)])
    assert runner.invoke(app, ["inbox", "--no-onboard"], catch_exceptions=False).exit_code == 0
    other = [m for m in logs.model.unique() if m != record["model"] and m != "synth-llm-04"][0]
    _spooled(settings, "decisions-again.jsonl", [_dump({**record, "decision_id": "new"}),
                                                  _dump({**record, "model": other})])
    result = runner.invoke(app, ["inbox", "--no-onboard"], catch_exceptions=False)
    assert "1 decisions accepted, 0 duplicates skipped, 1 rows quarantined" in result.output, result.output
    assert "line 2: decision_id is stored already with other content" in result.output
    assert _sql(settings, f"select model from decisions where decision_id = '{record['decision_id']}'") == [
        (record["model"],)]


def test_a_spool_file_written_in_place_is_taken_only_once_it_stands_still(pool, logs, monkeypatch):
    settings = _settings(pool, monkeypatch)
    monkeypatch.setenv("UNIROUTE_INBOX_SETTLE_SECONDS", "3")  # the early run waits this long, once: longer than
    # the run takes to look at the file first, on a loaded machine too
    first, second = _real_records(settings, logs.prompt.unique()[:2].tolist())
    path = settings.spool_dir / "decisions-in-place.jsonl"  # no .part: written where the inbox reads
    path.parent.mkdir(parents=True, exist_ok=True)
    torn = _dump(second)
    path.write_text(_dump(first) + "\n" + torn[:40])
    real_sleep = time.sleep

    def the_writer_goes_on(seconds: float) -> None:  # in the run's settle wait: after its first look, before its next
        if sys._getframe(1).f_code.co_name == "_settled_files" and not path.read_text().endswith("\n"):
            with path.open("a") as rest:
                rest.write(torn[40:] + "\n")
        real_sleep(seconds)

    with monkeypatch.context() as during_the_run:
        during_the_run.setattr(inbox_module.time, "sleep", the_writer_goes_on)
        early = runner.invoke(app, ["inbox", "--no-onboard"], catch_exceptions=False)
    assert path.read_text().endswith("\n")  # the writer did go on while the run waited
    assert early.exit_code == 0 and "decisions-in-place.jsonl" not in early.output, early.output
    assert path.exists() and _sql(settings, "select count(*) from decisions") == [(0,)]
    # Status counts with the user's settle window, not its own: a file last written 100 s ago is still being written
    # for a window of an hour (the default 2 s would not count it; the clock cannot race this).
    monkeypatch.setenv("UNIROUTE_INBOX_SETTLE_SECONDS", "3600")
    os.utime(path, (time.time() - 100, time.time() - 100))
    status = runner.invoke(app, ["status"], catch_exceptions=False)
    assert "1 of the waiting file(s) still being written in place (no .part)" in status.output, status.output
    os.utime(path, (0, 0))  # it stood still since
    later = runner.invoke(app, ["inbox", "--no-onboard"], catch_exceptions=False)
    assert "decisions-in-place.jsonl: ingested" in later.output and "2 decisions accepted" in later.output, later.output
    assert _sql(settings, "select count(*) from decision_quarantine") == [(0,)]


def test_the_shadow_gate_names_the_challenger_when_the_challenger_cannot_replay(traffic_with_old_rows):
    """A challenger on another embedder than the traffic's: the skip line names the challenger, not the champion."""
    settings = traffic_with_old_rows
    with store.opened(settings.db_path) as con:
        champion = replay_router(con, "champion")
        challenger = dataclasses.replace(champion.router, embedder_id="another-embedder")
        gate = shadow_gate(con, challenger, ShadowConfig(min_decisions=10))
    assert gate.verdict == "skipped", gate.line
    assert "the challenger (this build's router) was fitted on embedder another-embedder" in gate.line, gate.line
    assert f"router {champion.router_id} was fitted" not in gate.line
