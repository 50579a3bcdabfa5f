"""Outcomes files (decision_id, score, optional cost and tokens; CSV, JSON lines, Parquet): detected by content,
taken by `uniroute ingest` and the inbox in one transaction, idempotent; bad files get one line and change
nothing; realized_quality is the hand-computed mean."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from uniroute import operations, store
from uniroute.cli import app
from uniroute.ingest.outcomes import MAX_OUTCOME_BYTES
from uniroute.operations.context import Context
from uniroute.pipeline.serving.route import RoutingRequest
from uniroute.settings import Settings

runner = CliRunner()


def _sql(home: Path, sql: str) -> pd.DataFrame:
    with store.opened(home / "uniroute.duckdb", read_only=True) as con:
        return con.execute(sql).df()


@pytest.fixture(scope="module")
def decided_template(traffic_template, tmp_path_factory) -> tuple[Path, pd.DataFrame]:
    """(home, decisions): a copy of the served home with 40 routed prompts (decisions at lambda 0, so several models
    and clusters, and at budget 0.2) ingested by the inbox; routed once per module."""
    home, prompts = tmp_path_factory.mktemp("decided") / "home", traffic_template[1]
    shutil.copytree(traffic_template[0], home, symlinks=True)
    settings = Settings(home=home, mlflow=False)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("UNIROUTE_HOME", str(home))
        env.setenv("UNIROUTE_MLFLOW", "false")
        low = operations.route(Context.of(settings), prompts[:20], RoutingRequest(lam=0.0)).decisions
        high = operations.route(Context.of(settings), prompts[20:40], RoutingRequest(budget=0.2)).decisions
        assert runner.invoke(app, ["inbox", "--no-onboard"], catch_exceptions=False).exit_code == 0
    return home, pd.concat([low, high], ignore_index=True)


@pytest.fixture
def decided(decided_template, traffic_home) -> pd.DataFrame:
    """The 40 decisions, in this test's own copy of the home (traffic_home now holds them)."""
    shutil.rmtree(traffic_home)
    shutil.copytree(decided_template[0], traffic_home, symlinks=True)
    return decided_template[1].copy()


def _ingest(*paths: Path):
    return runner.invoke(app, ["ingest", *map(str, paths)])


def test_known_scores_give_realized_quality_the_hand_computed_mean(traffic_home, decided, tmp_path):
    rng = np.random.default_rng(0)
    outcomes = pd.DataFrame({"decision_id": decided.decision_id, "score": rng.integers(0, 2, len(decided)) * 1.0,
                             "cost": rng.uniform(0.01, 0.1, len(decided)), "input_tokens": 100,
                             "output_tokens": rng.integers(1, 500, len(decided))})
    # the three formats, a third of the outcomes each
    outcomes.iloc[:13].to_csv(tmp_path / "a.csv", index=False)
    (tmp_path / "b.jsonl").write_text("".join(json.dumps(r) + "\n" for r in outcomes.iloc[13:26].to_dict("records")))
    outcomes.iloc[26:].to_parquet(tmp_path / "c.parquet", index=False)
    result = _ingest(tmp_path / "a.csv", tmp_path / "b.jsonl", tmp_path / "c.parquet")
    assert result.exit_code == 0, result.output
    assert "13 outcomes accepted" in result.output and "14 outcomes accepted" in result.output
    merged = decided.merge(outcomes, on="decision_id")
    hand = merged.groupby(["model", "cluster"]).score.agg(["count", "mean"]).reset_index()
    view = _sql(traffic_home, "select model, cluster, n_outcomes, realized_score, realized_lo, realized_hi, "
                              "expected_score from realized_quality order by model, cluster")
    joined = hand.merge(view, on=["model", "cluster"])
    assert len(joined) == len(hand) == len(view)
    assert joined["count"].tolist() == joined.n_outcomes.tolist()
    assert np.allclose(joined["mean"], joined.realized_score)
    assert (joined.realized_lo <= joined.realized_score).all() and (joined.realized_score <= joined.realized_hi).all()
    assert joined.expected_score.between(0, 1).all()
    assert len(_sql(traffic_home, "select * from routing_outcomes")) == 40
    # The sandboxed `uniroute sql` reads the traffic views.
    total = "select cast(sum(n_outcomes) as integer) as n from realized_quality"
    rows = json.loads(runner.invoke(app, ["sql", total, "--json"]).stdout)
    assert rows == [{"n": 40}]
    # Idempotent: the same files again, and the same outcomes in another file, change nothing.
    assert "skipped" in _ingest(tmp_path / "a.csv").output
    outcomes.to_csv(tmp_path / "all.csv", index=False)
    again = _ingest(tmp_path / "all.csv")
    assert again.exit_code == 0 and "0 outcomes accepted, 40 duplicates skipped" in again.output, again.output
    assert len(_sql(traffic_home, "select * from outcomes")) == 40


def _state(home: Path) -> tuple[int, int, int]:
    counts = _sql(home, "select (select count(*) from outcomes) as o, (select count(*) from quarantine) as q, "
                        "(select count(*) from ingested_files) as f")
    return tuple(int(x) for x in counts.iloc[0])


def test_each_bad_outcomes_file_gets_one_line_and_changes_nothing(traffic_home, decided, tmp_path):
    first, second = decided.decision_id.iloc[0], decided.decision_id.iloc[1]
    bad = {
        "above.csv": (f"decision_id,score\n{first},1\n{second},1.5\n", "row 2: score must be a number in [0, 1], "
                                                                          "not '1.5'"),
        "nan.jsonl": (json.dumps({"decision_id": first, "score": 1}) + "\n"
                      + f'{{"decision_id": "{second}", "score": NaN}}\n', "row 2: score must be a number in [0, 1]"),
        "clash.csv": (f"decision_id,score\n{first},1\n{second},0\n{first},0\n",
                      f"decision_id '{first}' is given different scores (row 1: 1, row 3: 0)"),
        "cost.csv": (f"decision_id,score,cost\n{first},1,-2\n", "row 1: cost must be a finite number >= 0, not '-2'"),
        "tokens.csv": (f"decision_id,score,output_tokens\n{first},1,2.5\n", "row 1: output_tokens must be a whole "
                                                                             "number >= 0, not '2.5'"),
        "blank.csv": ("decision_id,score\n,1\n", "row 1 has no decision_id"),
    }
    before = _state(traffic_home)
    for name, (text, message) in bad.items():
        (tmp_path / name).write_text(text)
        result = _ingest(tmp_path / name)
        assert result.exit_code == 1, (name, result.output)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and message in lines[0] and name in lines[0], (name, result.stderr)
        assert _state(traffic_home) == before, name
    huge = tmp_path / "huge.csv"
    with open(huge, "w") as handle:  # a sparse file: the size is refused before a byte past the header is read
        handle.write("decision_id,score\n")
        handle.truncate(MAX_OUTCOME_BYTES + 1)
    result = _ingest(huge)
    assert result.exit_code == 1 and "over the limit of 512 MiB: split it" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and _state(traffic_home) == before
    os.remove(huge)


def test_unknown_ids_wait_and_changed_scores_are_quarantined(traffic_home, decided, tmp_path):
    first, second = decided.decision_id.iloc[0], decided.decision_id.iloc[1]
    (tmp_path / "mixed.csv").write_text(f"decision_id,score\n{first},1\nnobody,0\n")
    result = _ingest(tmp_path / "mixed.csv")
    assert result.exit_code == 0 and "1 outcomes accepted" in result.output and "0 rows quarantined" in result.output
    assert "1 outcomes wait for their decisions" in result.output
    (tmp_path / "changed.jsonl").write_text(json.dumps({"decision_id": first, "score": 0.0}) + "\n"
                                            + json.dumps({"decision_id": second, "score": 0.5}) + "\n")
    assert _ingest(tmp_path / "changed.jsonl").exit_code == 0
    reasons = _sql(traffic_home, "select row_number, reason from quarantine order by quarantined_at, row_number")
    assert reasons.reason.tolist() == ["the decision already has score 1.0 from an earlier outcome"]
    assert _sql(traffic_home, "select decision_id from pending_outcomes").decision_id.tolist() == ["nobody"]
    assert _sql(traffic_home, "select score from outcomes order by score").score.tolist() == [0.5, 1.0]


def test_the_inbox_takes_outcomes_files(traffic_home, decided):
    inbox = traffic_home / "inbox"
    inbox.mkdir(exist_ok=True)
    pd.DataFrame({"decision_id": decided.decision_id[:5], "score": 1.0}).to_csv(inbox / "thumbs.csv.part", index=False)
    os.rename(inbox / "thumbs.csv.part", inbox / "thumbs.csv")
    result = runner.invoke(app, ["inbox", "--no-onboard"], catch_exceptions=False)
    assert result.exit_code == 0 and "thumbs.csv: ingested" in result.output, result.output
    assert len(_sql(traffic_home, "select * from routing_outcomes")) == 5


def test_outcomes_that_arrive_before_their_decisions_wait_and_land_with_them(traffic_home, prompts, tmp_path):
    settings = Settings(home=traffic_home, mlflow=False)
    routed = operations.route(Context.of(settings), prompts[:4], RoutingRequest(lam=0.0)).decisions
    spooled = list(settings.spool_dir.glob("*.jsonl"))
    held = tmp_path / "held"  # the spool file arrives late: held back while the outcomes are ingested
    held.mkdir()
    for path in spooled:
        path.rename(held / path.name)
    early = tmp_path / "early.csv"
    pd.DataFrame({"decision_id": routed.decision_id, "score": [1.0, 0.0, 1.0, 0.5]}).to_csv(early, index=False)
    first = _ingest(early)
    assert first.exit_code == 0 and "0 outcomes accepted" in first.output, first.output
    assert "4 outcomes wait for their decisions" in first.output
    assert _sql(traffic_home, "select count(*) as n from outcomes").n.iloc[0] == 0
    assert "skipped" in _ingest(early).output  # the same file again changes nothing
    shown = runner.invoke(app, ["status"], catch_exceptions=False).output
    assert "outcomes   4 wait for their decisions (matched when these land, within 7 days)" in shown
    for path in held.iterdir():
        path.rename(settings.spool_dir / path.name)
    assert runner.invoke(app, ["inbox", "--no-onboard"], catch_exceptions=False).exit_code == 0
    landed = _sql(traffic_home, "select decision_id, score from routing_outcomes order by decision_id")
    expected = pd.DataFrame({"decision_id": routed.decision_id, "score": [1.0, 0.0, 1.0, 0.5]})
    assert landed.to_dict("records") == expected.sort_values("decision_id").to_dict("records")


def test_one_inbox_run_lands_spooled_decisions_before_the_outcomes_that_name_them(traffic_home, prompts):
    routed = operations.route(Context.of(Settings(home=traffic_home, mlflow=False)), prompts[:6],
                              RoutingRequest(lam=0.0)).decisions
    inbox = traffic_home / "inbox"
    inbox.mkdir(exist_ok=True)
    pd.DataFrame({"decision_id": routed.decision_id, "score": 0.5}).to_parquet(inbox / "judged.parquet")
    result = runner.invoke(app, ["inbox", "--no-onboard"], catch_exceptions=False)
    assert result.exit_code == 0 and "judged.parquet: ingested" in result.output, result.output
    assert len(_sql(traffic_home, "select * from routing_outcomes")) == 6


def test_outcomes_with_a_model_column_and_a_u2028_in_a_string_are_outcomes(traffic_home, decided, tmp_path):
    first, second = decided.decision_id.iloc[0], decided.decision_id.iloc[1]
    (tmp_path / "answered.csv").write_text(f"decision_id,score,model\n{first},1,synth-llm-00\n")
    result = _ingest(tmp_path / "answered.csv")
    assert result.exit_code == 0 and "[outcomes]" in result.output and "1 outcomes accepted" in result.output
    (tmp_path / "noted.jsonl").write_text(json.dumps({"decision_id": second, "score": 0.5, "note": "a\u2028b"},
                                                     ensure_ascii=False) + "\n", encoding="utf-8")
    noted = _ingest(tmp_path / "noted.jsonl")
    assert noted.exit_code == 0 and "1 outcomes accepted" in noted.output, noted.output
    assert _sql(traffic_home, "select count(*) as n from models where model = 'synth-llm-00'").n.iloc[0] == 1
