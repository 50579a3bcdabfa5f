"""A state folder is relocatable: a plain copy of $UNIROUTE_HOME (a backup restored elsewhere, a moved folder)
keeps working once the original is gone, and MLflow's store of another home is named in one line."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from tests.robustness.conftest import NEWCOMER
from uniroute import store
from uniroute.cli import app
from uniroute.pipeline.pool import registry

runner = CliRunner()


def _run(*args: str, code: int = 0) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == code, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.stdout


def _mlflow_texts(db_file: Path) -> str:
    """Every text cell of mlflow.db, joined (to look for a path)."""
    con = sqlite3.connect(db_file)
    try:
        cells = []
        for (table,) in con.execute("select name from sqlite_master where type = 'table'").fetchall():
            cells += [repr(row) for row in con.execute(f'select * from "{table}"').fetchall()]
        return "\n".join(cells)
    finally:
        con.close()


@pytest.fixture(scope="module")
def left_behind(pool_template, tmp_path_factory) -> tuple[Path, Path]:
    """(original, backup): a copy of the pool with its MLflow lineage logged under the original home, backed up
    to another folder; the original deleted. Logged once per module (MLflow from scratch is the slow part)."""
    root = tmp_path_factory.mktemp("relocated")
    original, backup = root / "original" / "home", root / "backup" / "home"
    shutil.copytree(pool_template[0], original, symlinks=True)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("UNIROUTE_HOME", str(original))
        env.setenv("UNIROUTE_EMBEDDER", "tfidf")
        _run("publish", "--force")  # reconciliation logs the lineage to MLflow under the original home
    assert (original / "mlflow.db").exists() and str(original) in _mlflow_texts(original / "mlflow.db")
    shutil.copytree(original, backup, symlinks=True)
    shutil.rmtree(original)
    return original, backup


@pytest.fixture
def moved(left_behind, tmp_path, monkeypatch) -> tuple[Path, Path]:
    """(original, copy): this test's own copy of the backup, restored to a new folder; the original is gone."""
    original, backup = left_behind
    copy = tmp_path / "restored" / "home"
    shutil.copytree(backup, copy, symlinks=True)
    monkeypatch.setenv("UNIROUTE_EMBEDDER", "tfidf")
    monkeypatch.setenv("UNIROUTE_HOME", str(copy))
    return original, copy


def test_a_copied_home_works_after_the_original_is_gone(moved, logs, tmp_path):
    old, moved = moved
    checked = runner.invoke(app, ["doctor", "--check"])
    assert checked.exit_code == 1 and "broken   mlflow: the MLflow store's artifacts moved from" in checked.stdout
    assert "(the home was copied or moved): `uniroute doctor` rewrites them" in checked.stdout

    _run("build")
    with store.opened(moved / "uniroute.duckdb", read_only=True) as con:
        val = set(con.execute("select prompt_id from prompt_splits where split = 'val'").df().prompt_id)
    newcomer = logs[(logs.model == NEWCOMER) & logs.prompt_id.isin(val)].drop(columns=["split"])
    newcomer.to_csv(tmp_path / "newcomer.csv", index=False)
    _run("onboard", "--results", str(tmp_path / "newcomer.csv"))
    published = _run("publish")
    assert str(moved / "published") in published
    routed = json.loads(_run("route", "solve the quadratic equation", "--json"))
    assert len(routed) == 1 and routed[0]["model"].startswith("synth-llm")
    doctor = _run("doctor", "--check")
    assert doctor.count("ok ") == doctor.count("\n"), doctor

    mlflow_texts = _mlflow_texts(moved / "mlflow.db")
    assert str(moved) in mlflow_texts and f"{old}/" not in mlflow_texts
    with store.opened(moved / "uniroute.duckdb", read_only=True) as con:
        champion = registry.champion_id(con)
    import mlflow

    from uniroute.pipeline.tracking import champion_version

    uri = f"sqlite:///{moved / 'mlflow.db'}"
    assert champion_version(uri)["router_id"] == champion
    mlflow.set_tracking_uri(uri)
    try:
        model = mlflow.pyfunc.load_model("models:/uniroute-router@champion")
        routed = model.predict(pd.DataFrame({"prompt": ["what caused the revolution"]}))
    finally:
        mlflow.set_tracking_uri(None)
    assert routed.model.iloc[0] in set(logs.model)


def test_a_tracking_store_of_another_home_is_one_line(moved):
    moved = moved[1]
    shutil.rmtree(moved / "mlartifacts")  # mlflow.db alone: its artifacts are in no folder of this home
    checked = runner.invoke(app, ["doctor", "--check"])
    assert checked.exit_code == 1, checked.output
    line = next(x for x in checked.stdout.splitlines() if x.startswith("broken   mlflow"))
    assert "belongs to another UNIROUTE_HOME; move it aside (mv " in line and "mlflow.db.foreign)" in line
    published = runner.invoke(app, ["publish", "--force"])
    assert published.exit_code == 0 and published.exception is None
    warning = [x for x in published.stderr.splitlines() if "belongs to another UNIROUTE_HOME" in x]
    assert len(warning) == 1 and warning[0].startswith("warning: mlflow: ")
    # the repair the line names: move it aside, and the next reconciliation logs the lineage afresh
    (moved / "mlflow.db").rename(moved / "mlflow.db.foreign")
    _run("doctor")
    assert _run("doctor", "--check").count("broken") == 0
    # and it logged every publication with its files, though the store recorded them under the deleted original
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{moved / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("uniroute").experiment_id],
                              filter_string="tags.kind = 'publish'")
    assert len(runs) == 3  # the template's, the fixture's and this test's
    for run in runs:
        assert "routes.parquet" in {f.path for f in client.list_artifacts(run.info.run_id)}


def test_the_champion_loads_with_mlflow_in_a_new_process_from_the_copy(moved, logs, tmp_path):
    """As docs/operate.md serves it: MLFLOW_TRACKING_URI at the copy's mlflow.db, `models:/uniroute-router@champion`
    with --env-manager local, in a process that never saw the original folder (which is gone)."""
    old, moved = moved
    _run("doctor")  # the repair `doctor --check` names: the artifact locations follow the copy
    requests = tmp_path / "requests.json"
    requests.write_text(json.dumps({"dataframe_records": [{"prompt": "what caused the revolution"}]}))
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{moved / 'mlflow.db'}",
           "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "false"}
    done = subprocess.run([str(Path(sys.executable).parent / "mlflow"), "models", "predict", "-m",
                           "models:/uniroute-router@champion", "--env-manager", "local", "-i", str(requests),
                           "-t", "json"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert not old.exists()
    predictions = json.loads(done.stdout.strip().splitlines()[-1])["predictions"]
    assert len(predictions) == 1 and predictions[0]["model"] in set(logs.model)
