"""Replay of a hierarchy champion (kind `kmeans_hier`): the decisions it served are reproduced from their stored
embeddings, as for the plain K-means champion of the other traffic tests."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from typer.testing import CliRunner

from tests.helpers import build, ingest, publish
from uniroute import store
from uniroute.cli import app
from uniroute.pipeline.traffic.replay import ReplaySetting, ReplayWindow, replay, replay_router
from uniroute.settings import Settings
from uniroute.synth import write_synthetic_logs

runner = CliRunner()


def test_a_hierarchy_champion_reproduces_every_logged_decision(tmp_path, monkeypatch):
    summary = write_synthetic_logs(tmp_path / "logs", n_prompts=300, n_models=4, n_topics=4, seed=3, with_split=True)
    settings = Settings(home=tmp_path / "home", mlflow=False)
    settings.home.mkdir()
    monkeypatch.setenv("UNIROUTE_HOME", str(settings.home))
    monkeypatch.setenv("UNIROUTE_MLFLOW", "false")
    ingest(settings.db_path, summary.logs_path, progress=False)
    assert build(settings.db_path, "tfidf", kinds=("kmeans_hier",)).kind == "kmeans_hier"
    publish(settings.db_path, settings.published_dir)
    prompts = pd.read_parquet(summary.logs_path).drop_duplicates("prompt_id").prompt.tolist()
    batch = tmp_path / "prompts.jsonl"
    batch.write_text("".join(json.dumps({"n": i, "prompt": p}) + "\n" for i, p in enumerate(prompts)))
    routed = runner.invoke(app, ["route", "--file", str(batch), "--lambda", "0"], catch_exceptions=False)
    assert routed.exit_code == 0, routed.output
    logged = pd.DataFrame([json.loads(line) for line in routed.stdout.splitlines()])
    assert runner.invoke(app, ["inbox", "--no-onboard"], catch_exceptions=False).exit_code == 0
    with store.opened(settings.db_path, read_only=True) as con:
        using = replay_router(con, "champion")
        assert using.router.kind == "kmeans_hier"
        _, traffic = replay(con, using, ReplayWindow(), ReplaySetting())
    by_id = dict(zip(traffic.decision_id, np.asarray(traffic.models)[traffic.chosen], strict=True))
    assert [by_id[d] for d in logged.decision_id] == logged.model.tolist()
