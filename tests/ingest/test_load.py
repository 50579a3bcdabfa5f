"""Ingestion: formats by content, one transaction per file, quarantine with reasons, merges, the inbox."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from tests.helpers import ingest
from tests.ingest.files import BASE, long_csv, rows, snapshot, write
from uniroute import store
from uniroute.ingest import IngestError, load, set_default_cost


def test_reingesting_a_file_changes_nothing(db_path, tmp_path):
    path = write(tmp_path / "a.csv", long_csv("p1,Q one,m1,1,0.5", "p2,Q two,m1,0,0.5"))
    ingest(db_path, path, progress=False)
    before = snapshot(db_path)
    again = ingest(db_path, path, progress=False)
    assert again.status == "skipped" and again.rows_accepted == 0
    assert snapshot(db_path) == before


def test_identical_rows_in_another_file_are_skipped_not_duplicated(db_path, tmp_path):
    ingest(db_path, write(tmp_path / "a.csv", long_csv("p1,Q one,m1,1,0.5")), progress=False)
    summary = ingest(
        db_path, write(tmp_path / "b.csv", long_csv("p1,Q one,m1,1.0,0.50", "p1,Q one,m2,0,0.1")), progress=False)
    assert (summary.rows_accepted, summary.rows_duplicate, summary.new_prompts) == (1, 1, 0)
    assert rows(db_path, "select count(*) from results") == [(2,)]


def test_split_option_marks_prompts_and_a_contradicting_column_is_quarantined(db_path, tmp_path):
    path = write(tmp_path / "a.csv", "prompt_id,prompt,model,score,cost,split\np1,Q,m1,1,,\np2,R,m1,1,,test\n")
    summary = ingest(db_path, path, split="val", progress=False)
    assert rows(db_path, "select prompt_id, split from prompts") == [("p1", "val")]
    assert summary.rows_quarantined == 1
    assert rows(db_path, "select row_number, reason from quarantine") == [
        (2, 'split "test" in the file but these results are read as split val (--split, or `onboard`, which '
            'takes validation results)')]
    with pytest.raises(IngestError, match="split must be one of"):
        ingest(db_path, path, split="validation", progress=False)


def test_landed_models_are_those_with_new_results_on_val_or_unknown_split(db_path, tmp_path):
    path = write(tmp_path / "a.csv", "prompt_id,prompt,model,score,cost,split\n"
                 "p1,Q,m_train,1,,train\np2,R,m_val,1,,val\np3,S,m_unknown,1,,\np4,T,m_val,0,,test\n")
    summary = ingest(db_path, path, progress=False)
    assert summary.landed_models == ("m_unknown", "m_val")
    # the same results again land nothing new
    again = ingest(db_path, write(tmp_path / "b.csv", path.read_text() + "\n"), progress=False)
    assert again.landed_models == () and again.rows_duplicate == 4


def set_cost(db_path, model, cost):
    with store.session(db_path, "set-cost") as s:
        set_default_cost(s.con, model, cost)


def test_set_default_cost(db_path, tmp_path):
    ingest(db_path, write(tmp_path / "a.csv", long_csv("p1,Q,gpt-x,1,")), progress=False)
    set_cost(db_path, "gpt-x", 0.002)
    # One source of costs: set-cost records an undated per-call price, which priced_models shows as default_cost.
    assert rows(db_path, "select default_cost from priced_models") == [(0.002,)]
    assert rows(db_path, "select model, valid_from::varchar, per_call, source from prices") == [
        ("gpt-x", "1970-01-01", 0.002, "set-cost")]
    set_cost(db_path, "gpt-x", 0.002)  # the same price again records nothing
    assert rows(db_path, "select count(*) from prices") == [(1,)]
    with pytest.raises(IngestError, match=r"unknown model 'gpt-y'.*did you mean \['gpt-x'\]"):
        set_cost(db_path, "gpt-y", 1.0)
    for bad in (-1.0, float("nan"), float("inf"), 1e308):
        with pytest.raises(IngestError, match=r"finite number in \[0, 1e\+06\]"):
            set_cost(db_path, "gpt-x", bad)
    assert rows(db_path, "select default_cost from priced_models") == [(0.002,)]


# ---------------------------------------------------------------------------------------------- command line


def test_cli_ingest_and_set_cost(home, tmp_path, monkeypatch):
    from uniroute.cli import app

    monkeypatch.setenv("UNIROUTE_HOME", str(home))
    good = write(tmp_path / "a.csv", long_csv("p1,Q,m1,1,0.5"))
    runner = CliRunner()
    result = runner.invoke(app, ["ingest", str(good), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)[0]["rows_accepted"] == 1
    result = runner.invoke(app, ["ingest", str(write(tmp_path / "e.csv", ""))])
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines() == [f"error: {tmp_path / 'e.csv'}: the file is empty"]
    assert runner.invoke(app, ["models", "set-cost", "m1", "0.25"]).exit_code == 0
    result = runner.invoke(app, ["models", "set-cost", "nope", "0.25"])
    assert result.exit_code == 1 and "unknown model 'nope'" in result.stderr


def test_progress_only_on_large_files_and_as_log_lines_off_a_terminal(db_path, tmp_path, capsys, caplog,
                                                                       monkeypatch):
    caplog.set_level(logging.INFO, logger="uniroute.ingest.load")
    path = write(tmp_path / "a.csv", long_csv("p1,Q,m1,1,0.5"))
    ingest(db_path, path, progress=True)
    assert "/4 stage" not in capsys.readouterr().err + caplog.text
    monkeypatch.setattr(load, "LARGE_FILE_BYTES", 1)
    ingest(db_path, write(tmp_path / "b.csv", long_csv("p2,Q,m1,1,0.5")), progress=True)
    # stderr is not a terminal here: no bar on it, a closing line in the log instead
    assert capsys.readouterr().err == "" and "b.csv: 4/4 stage (100%)" in caplog.text
    caplog.clear()
    ingest(db_path, write(tmp_path / "c.csv", long_csv("p3,Q,m1,1,0.5")), progress=False)
    assert capsys.readouterr().err == "" and "/4 stage" not in caplog.text


# ---------------------------------------------------------------------------------------------- inbox


# ---------------------------------------------------------------------------------------------- crash safety


def test_a_failure_while_writing_rolls_the_whole_file_back(db_path, tmp_path, monkeypatch):
    ingest(db_path, write(tmp_path / "base.csv", BASE), progress=False)
    before = snapshot(db_path)
    real_execute = store.execute

    def failing(con, name, **params):
        real_execute(con, name, **params)
        if name == "ingest_insert_results":  # models and prompts are written by now
            raise RuntimeError("disk full")

    monkeypatch.setattr(store, "execute", failing)
    path = write(tmp_path / "new.csv", long_csv("q1,Q,m9,1,0.1"))
    with pytest.raises(RuntimeError, match="disk full"):
        ingest(db_path, path, progress=False)
    monkeypatch.setattr(store, "execute", real_execute)
    assert snapshot(db_path) == before
    assert ingest(db_path, path, progress=False).rows_accepted == 1


KILL_SCRIPT = """
import logging, sys
from pathlib import Path
logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(message)s")
from tests.helpers import ingest
ingest(Path(sys.argv[1]), Path(sys.argv[2]), progress=False)
"""


def _big_long_parquet(path: Path, n_prompts: int, n_models: int) -> Path:
    import numpy as np

    p = np.repeat(np.arange(n_prompts), n_models)
    m = np.tile(np.arange(n_models), n_prompts)
    ids = pa.array([f"big-{i}" for i in range(n_prompts)])
    texts = pa.array([f"synthetic prompt number {i} with some words" for i in range(n_prompts)])
    pq.write_table(pa.table({
        "prompt_id": ids.take(pa.array(p)),
        "prompt": texts.take(pa.array(p)),
        "model": pa.array([f"big-m{j}" for j in range(n_models)]).take(pa.array(m)),
        "score": (p + m) % 2 * 1.0,
        "cost": np.full(len(p), 0.5),
    }), path)
    return path


@pytest.mark.slow
def test_killed_mid_ingest_leaves_the_store_as_before_and_a_rerun_works(db_path, tmp_path):
    ingest(db_path, write(tmp_path / "base.csv", BASE), progress=False)
    before = snapshot(db_path)
    big = _big_long_parquet(tmp_path / "big.parquet", 200_000, 10)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.Popen([sys.executable, "-c", KILL_SCRIPT, str(db_path), str(big)],
                            stderr=subprocess.PIPE, text=True, env=env)
    seen = []
    deadline = time.monotonic() + 300
    for line in proc.stderr:  # kill it while it writes, inside its transaction
        seen.append(line)
        if ": writing" in line or time.monotonic() > deadline:
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, "".join(seen)
    assert any(": writing" in line for line in seen), "".join(seen)
    assert snapshot(db_path) == before
    summary = ingest(db_path, big, progress=False)
    assert (summary.rows_accepted, summary.new_prompts, summary.new_models) == (2_000_000, 200_000, 10)
    assert rows(db_path, "select count(*) from results") == [(2_000_002,)]


def test_the_same_text_under_two_ids_with_conflicting_scores_is_quarantined(db_path, tmp_path):
    # In one file: p2 repeats p1's text; m1 scored it 1 there and 0 here, so the later row cannot stand.
    path = write(tmp_path / "a.csv", long_csv("p1,Same question,m1,1,0.5", "p2,Same question,m1,0,0.5",
                                              "p3,Other question,m1,1,0.5", "p4,Other question,m2,1,0.5"))
    summary = ingest(db_path, path, progress=False)
    assert (summary.rows_accepted, summary.rows_quarantined) == (3, 1)
    assert rows(db_path, "select row_number, reason from quarantine") == [(
        2, 'prompt_id "p2" has the same text as prompt_id "p1" on row 1, and model "m1" scored it 1.0 there, '
           '0.0 here')]
    assert summary.shared_texts == 2  # p3/p4 share a text under different models: no conflict, kept, reported
    # Against the store: a later file with the same text under a new id and another score for m1.
    later = ingest(db_path, write(tmp_path / "b.csv", long_csv("q9,Same question,m1,0,0.5",
                                                               "q8,Other question,m3,1,0.5")), progress=False)
    assert (later.rows_accepted, later.rows_quarantined, later.shared_texts) == (1, 1, 1)
    reason = rows(db_path, "select reason from quarantine where row_number = 1 and path like '%b.csv'")[0][0]
    assert reason.startswith('prompt_id "q9" has the same text as the stored prompt_id "p1", which model "m1" '
                             "scored 1.0 (from ")
    assert "1 prompt ids share their text with another prompt id" in later.line()


def test_a_routerdc_pair_named_train_and_test_is_one_task(db_path, tmp_path):
    folder = tmp_path / "my_benchmark"
    entry = {"question": "What is 2 + 2?", "scores": {"m1": 1, "m2": 0}}
    train = write(folder / "train.json", json.dumps([entry, {"question": "Q only in train", "scores": {"m1": 1}}]))
    test = write(folder / "test.json", json.dumps([entry, {"question": "What is 2 + 2?", "scores": {"m3": 1}}]))
    ingest(db_path, train, progress=False)
    ingest(db_path, test, progress=False)
    assert rows(db_path, "select distinct benchmark from prompts") == [("my_benchmark",)]
    # the question in both files is one prompt, with the results of both
    assert rows(db_path, "select count(*) from prompts") == [(2,)]
    assert rows(db_path, "select count(*) from results where prompt_id in (select prompt_id from prompts "
                         "where text = 'What is 2 + 2?')") == [(3,)]
