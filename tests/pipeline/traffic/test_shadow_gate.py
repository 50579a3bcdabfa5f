"""The nightly build's shadow gate: a challenger made worse on purpose (a model's labels flipped) passes the
validation comparison alone but is refused on the traffic the champion served; an honest rebuild passes; too little
traffic skips the gate with a line saying so."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from uniroute import store
from uniroute.cli import app
from uniroute.pipeline.traffic.shadow_gate import paired_worse
from uniroute.synth import write_synthetic_logs

runner = CliRunner()


def _sql(home: Path, sql: str) -> pd.DataFrame:
    with store.opened(home / "uniroute.duckdb", read_only=True) as con:
        return con.execute(sql).df()


def _build(monkeypatch, home: Path, gate: bool = True) -> dict:
    monkeypatch.setenv("UNIROUTE_HOME", str(home))
    monkeypatch.setenv("UNIROUTE_SHADOW_GATE", "true" if gate else "false")
    result = runner.invoke(app, ["build", "--embedder", "tfidf", "--kinds", "kmeans", "--json"],
                           catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture
def served(traffic_home, prompts, tmp_path) -> str:
    """The champion served every synthetic prompt at its default budget (recorded, ingested); the model it served
    most."""
    batch = tmp_path / "prompts.jsonl"
    batch.write_text("".join(json.dumps({"prompt": p}) + "\n" for p in prompts))
    routed = runner.invoke(app, ["route", "--file", str(batch)], catch_exceptions=False)
    assert routed.exit_code == 0, routed.output
    assert runner.invoke(app, ["inbox", "--no-onboard"], catch_exceptions=False).exit_code == 0
    models = pd.Series([json.loads(line)["model"] for line in routed.stdout.splitlines()])
    return str(models.value_counts().index[0])


@pytest.fixture
def newcomer_home(tmp_path, monkeypatch) -> tuple[Path, str]:
    """A served home whose strongest model answered validation and test prompts only (as a model onboarded after
    the training logs does), so the validation comparison, measured with the training LLMs, never reads its
    labels; the champion served every prompt at its default budget, recorded and ingested."""
    summary = write_synthetic_logs(tmp_path / "logs", n_prompts=300, n_models=4, n_topics=4, seed=3, with_split=True)
    logs = pd.read_parquet(summary.logs_path)
    strongest = str(logs.groupby("model").score.mean().idxmax())
    logs = logs[~((logs.model == strongest) & (logs.split == "train"))]
    logs.to_parquet(tmp_path / "newcomer.parquet", index=False)
    home = tmp_path / "home"
    monkeypatch.setenv("UNIROUTE_HOME", str(home))
    monkeypatch.setenv("UNIROUTE_MLFLOW", "false")
    assert runner.invoke(app, ["ingest", str(tmp_path / "newcomer.parquet")]).exit_code == 0
    assert _build(monkeypatch, home)["promoted"]
    batch = tmp_path / "prompts.jsonl"
    batch.write_text("".join(json.dumps({"prompt": p}) + "\n" for p in logs.drop_duplicates("prompt_id").prompt))
    routed = runner.invoke(app, ["route", "--file", str(batch)], catch_exceptions=False)
    assert routed.exit_code == 0, routed.output
    assert runner.invoke(app, ["inbox", "--no-onboard"], catch_exceptions=False).exit_code == 0
    assert strongest in {json.loads(line)["model"] for line in routed.stdout.splitlines()}
    return home, strongest


def test_a_challenger_with_flipped_labels_passes_validation_but_not_the_gate(newcomer_home, tmp_path, monkeypatch):
    home, flipped = newcomer_home
    with store.opened(home / "uniroute.duckdb") as con:  # the logs of one model made wrong on purpose
        con.execute("update results set score = 1 - score where model = ?", [flipped])
    without_gate = tmp_path / "without-gate"
    shutil.copytree(home, without_gate, symlinks=True)

    alone = _build(monkeypatch, without_gate, gate=False)
    assert alone["promoted"], alone["reason"]  # the validation comparison alone serves it
    assert "shadow gate skipped: switched off" in alone["reason"]

    gated = _build(monkeypatch, home)
    assert not gated["promoted"], gated["reason"]
    assert gated["val_area"] == alone["val_area"] and "but shadow gate refused" in gated["reason"]
    gate = gated["shadow"]
    assert gate["verdict"] == "refuse" and gate["n_decisions"] == 300
    assert gate["challenger_score"] < gate["champion_score"] and gate["p_worse"] < 0.01
    view = _sql(home, "select * from router_shadow_gate order by built_at desc")
    assert view.build_router_id.iloc[0] == gated["router_id"] and view.verdict.iloc[0] == "refuse"
    assert not view.build_promoted.iloc[0] and view.test.iloc[0].startswith("one-sided paired z-test")


def test_an_honest_rebuild_passes_the_gate(traffic_home, served, monkeypatch):
    rebuilt = _build(monkeypatch, traffic_home)
    assert rebuilt["promoted"], rebuilt["reason"]
    assert rebuilt["shadow"]["verdict"] == "pass" and rebuilt["shadow"]["difference"] == pytest.approx(0.0)
    assert _sql(traffic_home, "select verdict from router_shadow_gate").verdict.tolist() == ["pass"]


def test_too_little_traffic_skips_the_gate_with_a_line(traffic_home, monkeypatch):
    monkeypatch.setenv("UNIROUTE_SHADOW_MIN_DECISIONS", "10")
    rebuilt = _build(monkeypatch, traffic_home)
    assert rebuilt["promoted"]
    assert "shadow gate skipped: 0 decisions with embeddings in the last 7 days, 10 needed" in rebuilt["reason"]
    assert _sql(traffic_home, "select verdict from shadow_gates").verdict.tolist() == ["skipped"]


def test_the_paired_test_says_worse_only_when_it_is():
    rng = np.random.default_rng(0)
    assert paired_worse(rng.normal(-0.05, 0.1, 400))[2] < 0.01
    assert paired_worse(rng.normal(0.0, 0.1, 400))[2] > 0.01
    assert paired_worse(np.zeros(10)) == (0.0, 0.0, 1.0)
    assert paired_worse(np.full(10, -0.1))[2] == 0.0
