"""Ingestion: formats by content, one transaction per file, quarantine with reasons, merges, the inbox."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from uniroute import ingest, store
from uniroute.ingest import IngestError, ingest_file, process_inbox, set_default_cost

LONG_HEADER = "prompt_id,prompt,model,score,cost\n"
WIDE_HEADER = (",sample_id,prompt,eval_name,m1,m2,m3,m1|model_response,m1|total_cost,m2|total_cost,m3|total_cost,"
               "oracle\n")


def write(path: Path, content: str | bytes) -> Path:
    """Write a test file (text as UTF-8) and return its path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_bytes(content)
    return path


def snapshot(db_path: Path) -> dict[str, list[tuple]]:
    """Every row of the tables ingestion writes, sorted, for before/after comparisons."""
    out = {}
    with store.opened(db_path) as con:
        for table in ("prompts", "models", "results", "prompt_keys", "ingested_files", "quarantine"):
            out[table] = sorted(con.execute(f"select * from {table}").fetchall(), key=repr)
    return out


def rows(db_path: Path, sql: str) -> list[tuple]:
    with store.opened(db_path) as con:
        return con.execute(sql).fetchall()


def long_csv(*lines: str) -> str:
    return LONG_HEADER + "".join(line + "\n" for line in lines)


# ---------------------------------------------------------------------------------------------- long format


def test_long_csv_lands_prompts_models_results(db_path, tmp_path):
    path = write(tmp_path / "a.csv", long_csv(
        "p1,What is 1+1?,m1,1,0.5", "p1,What is 1+1?,m2,0,", "p2,Name a colour.,m1,0.25,0.5"))
    summary = ingest_file(db_path, path, progress=False)
    assert (summary.status, summary.format) == ("ingested", "long-csv")
    assert (summary.rows_read, summary.rows_accepted, summary.rows_quarantined) == (3, 3, 0)
    assert (summary.new_prompts, summary.new_models) == (2, 2)
    assert rows(db_path, "select prompt_id, text, text_hash, split from prompts order by 1") == [
        ("p1", "What is 1+1?", hashlib.sha256(b"What is 1+1?").hexdigest(), None),
        ("p2", "Name a colour.", hashlib.sha256(b"Name a colour.").hexdigest(), None),
    ]
    assert rows(db_path, "select prompt_id, model, score, cost from results order by 1, 2") == [
        ("p1", "m1", 1.0, 0.5), ("p1", "m2", 0.0, None), ("p2", "m1", 0.25, 0.5)]
    assert rows(db_path, "select model, status, default_cost from models order by 1") == [
        ("m1", "active", None), ("m2", "active", None)]
    assert rows(db_path, "select path, format, rows_accepted, new_prompts from ingested_files") == [
        (str(path.resolve()), "long-csv", 3, 2)]
    assert "3 results accepted" in summary.line() and "2 new prompts" in summary.line()
    assert json.loads(json.dumps(summary.as_dict()))["landed_models"] == ["m1", "m2"]


def _long_records() -> list[dict]:
    return [
        {"prompt_id": "p1", "prompt": "First, with a comma", "model": "m1", "score": 1.0, "cost": 0.5,
         "benchmark": "b", "split": "val"},
        {"prompt_id": "p1", "prompt": "First, with a comma", "model": "m2", "score": 0.0, "cost": None,
         "benchmark": "b", "split": "val"},
        {"prompt_id": "p2", "prompt": 'Second "quoted"\nline', "model": "m1", "score": 0.5, "cost": 2.0,
         "benchmark": None, "split": None},
    ]


@pytest.mark.parametrize("kind", ["csv", "jsonl", "parquet"])
def test_long_format_is_detected_by_content_whatever_the_name(db_path, tmp_path, kind):
    records = _long_records()
    path = tmp_path / "upload.dat"  # the name says nothing
    if kind == "parquet":
        pq.write_table(pa.Table.from_pylist(records), path)
    elif kind == "jsonl":
        write(path, "".join(json.dumps(r) + "\n" for r in records))
    else:
        import pandas as pd

        pd.DataFrame(records).to_csv(path, index=False)
    summary = ingest_file(db_path, path, progress=False)
    assert summary.format == f"long-{kind}"
    assert rows(db_path, "select prompt_id, text, benchmark, split from prompts order by 1") == [
        ("p1", "First, with a comma", "b", "val"), ("p2", 'Second "quoted"\nline', None, None)]
    assert rows(db_path, "select prompt_id, model, score, cost from results order by 1, 2") == [
        ("p1", "m1", 1.0, 0.5), ("p1", "m2", 0.0, None), ("p2", "m1", 0.5, 2.0)]


def test_reingesting_a_file_changes_nothing(db_path, tmp_path):
    path = write(tmp_path / "a.csv", long_csv("p1,Q one,m1,1,0.5", "p2,Q two,m1,0,0.5"))
    ingest_file(db_path, path, progress=False)
    before = snapshot(db_path)
    again = ingest_file(db_path, path, progress=False)
    assert again.status == "skipped" and again.rows_accepted == 0
    assert snapshot(db_path) == before


def test_identical_rows_in_another_file_are_skipped_not_duplicated(db_path, tmp_path):
    ingest_file(db_path, write(tmp_path / "a.csv", long_csv("p1,Q one,m1,1,0.5")), progress=False)
    summary = ingest_file(
        db_path, write(tmp_path / "b.csv", long_csv("p1,Q one,m1,1.0,0.50", "p1,Q one,m2,0,0.1")), progress=False)
    assert (summary.rows_accepted, summary.rows_duplicate, summary.new_prompts) == (1, 1, 0)
    assert rows(db_path, "select count(*) from results") == [(2,)]


def test_split_option_marks_prompts_and_a_contradicting_column_is_quarantined(db_path, tmp_path):
    path = write(tmp_path / "a.csv", "prompt_id,prompt,model,score,cost,split\np1,Q,m1,1,,\np2,R,m1,1,,test\n")
    summary = ingest_file(db_path, path, split="val", progress=False)
    assert rows(db_path, "select prompt_id, split from prompts") == [("p1", "val")]
    assert summary.rows_quarantined == 1
    assert rows(db_path, "select row_number, reason from quarantine") == [
        (2, 'split "test" in the file but --split val was given')]
    with pytest.raises(IngestError, match="split must be one of"):
        ingest_file(db_path, path, split="validation", progress=False)


def test_landed_models_are_those_with_new_results_on_val_or_unknown_split(db_path, tmp_path):
    path = write(tmp_path / "a.csv", "prompt_id,prompt,model,score,cost,split\n"
                 "p1,Q,m_train,1,,train\np2,R,m_val,1,,val\np3,S,m_unknown,1,,\np4,T,m_val,0,,test\n")
    summary = ingest_file(db_path, path, progress=False)
    assert summary.landed_models == ("m_unknown", "m_val")
    # the same results again land nothing new
    again = ingest_file(db_path, write(tmp_path / "b.csv", path.read_text() + "\n"), progress=False)
    assert again.landed_models == () and again.rows_duplicate == 4


# ---------------------------------------------------------------------------------------------- RouterBench


def _wide_row(index: int, sample: str, prompt: list[str], scores: dict[str, str], costs: dict[str, str]) -> str:
    cells = [str(index), sample, json.dumps(repr(prompt)), "arc"]
    cells += [scores.get(m, "") for m in ("m1", "m2", "m3")]
    cells += ['"[\'an answer, with a comma\']"']
    cells += [costs.get(m, "") for m in ("m1", "m2", "m3")]
    cells += ["m1"]
    return ",".join(cells) + "\n"


def test_routerbench_wide_csv_rows_and_costs(db_path, tmp_path):
    path = write(tmp_path / "rb.csv", WIDE_HEADER + _wide_row(
        7, "arc.1", ["Question: ", "why?"], {"m1": "1.0", "m2": "0.0", "m3": "nan"},
        {"m1": "0.25", "m2": "0.5", "m3": "0.75"}))
    summary = ingest_file(db_path, path, progress=False)
    assert summary.format == "routerbench-wide-csv" and summary.rows_accepted == 2
    assert rows(db_path, "select prompt_id, text, benchmark from prompts") == [("rb0-7", "Question: why?", "arc")]
    assert rows(db_path, "select model, score, cost from results order by 1") == [
        ("m1", 1.0, 0.25), ("m2", 0.0, 0.5)]


def test_routerbench_prompt_split_over_two_rows_is_merged(db_path, tmp_path):
    # sample s1: row 10 has only m3, row 11 the other two (disjoint: one prompt, id and text of the fuller row);
    # sample s2: rows 20 and 21 both have m1 (overlapping: two prompts sharing a sample_id)
    text = WIDE_HEADER
    text += _wide_row(10, "s1", ["Q1", "Q1"], {"m3": "1.0"}, {"m1": "2", "m2": "2", "m3": "2"})
    text += _wide_row(11, "s1", ["Q1"], {"m1": "1.0", "m2": "0.0"}, {"m1": "1", "m2": "1", "m3": "1"})
    text += _wide_row(20, "s2", ["Q2"], {"m1": "1.0"}, {"m1": "1"})
    text += _wide_row(21, "s2", ["Q3"], {"m1": "0.0"}, {"m1": "1"})
    summary = ingest_file(db_path, write(tmp_path / "rb.csv", text), progress=False)
    assert summary.new_prompts == 3
    assert rows(db_path, "select prompt_id, text from prompts order by 1") == [
        ("rb0-11", "Q1"), ("rb0-20", "Q2"), ("rb0-21", "Q3")]
    assert rows(db_path, "select model, score, cost from results where prompt_id = 'rb0-11' order by 1") == [
        ("m1", 1.0, 1.0), ("m2", 0.0, 1.0), ("m3", 1.0, 2.0)]


@pytest.mark.parametrize("fuller_first", [True, False])
def test_routerbench_split_prompt_merges_across_files_in_either_order(db_path, tmp_path, fuller_first):
    partial = write(tmp_path / "x.csv", WIDE_HEADER + _wide_row(10, "s1", ["Q1", "Q1"], {"m3": "1.0"}, {"m3": "2"}))
    fuller = write(tmp_path / "y.csv", WIDE_HEADER + _wide_row(
        11, "s1", ["Q1"], {"m1": "1.0", "m2": "0.0"}, {"m1": "1", "m2": "1"}))
    first, second = (fuller, partial) if fuller_first else (partial, fuller)
    ingest_file(db_path, first, progress=False)
    summary = ingest_file(db_path, second, progress=False)
    assert summary.merged_prompts == 1 and summary.new_prompts == 0
    assert rows(db_path, "select prompt_id, text from prompts") == [("rb0-11", "Q1")]
    assert rows(db_path, "select prompt_id, model, score, cost from results order by 2") == [
        ("rb0-11", "m1", 1.0, 1.0), ("rb0-11", "m2", 0.0, 1.0), ("rb0-11", "m3", 1.0, 2.0)]
    assert rows(db_path, "select key, prompt_id from prompt_keys") == [("s1", "rb0-11")]


# ---------------------------------------------------------------------------------------------- RouterDC


def test_routerdc_generative_scores_are_kept_and_probabilities_become_correctness(db_path, tmp_path):
    grid = write(tmp_path / "gsm_like-test.json", json.dumps([
        {"question": "Q1", "scores": {"m1": 0.3, "m2": 1}}, {"question": "Q2", "scores": {"m1": 0, "m2": 0.7}}]))
    prob = write(tmp_path / "mc_like_train.json", json.dumps([
        {"question": "Q1", "scores": {"m1": 0.8123, "m2": 0}, "cluster_id": 3}]))
    assert ingest_file(db_path, grid, progress=False).format == "routerdc-json"
    ingest_file(db_path, prob, progress=False)
    pid = "rdc-" + hashlib.sha1(b"gsm_like\0Q1").hexdigest()[:16]
    assert rows(db_path, f"select model, score, raw_score from results where prompt_id = '{pid}' order by 1") == [
        ("m1", 0.3, None), ("m2", 1.0, None)]
    pid = "rdc-" + hashlib.sha1(b"mc_like\0Q1").hexdigest()[:16]  # the _train suffix is not the task's name
    assert rows(db_path, f"select model, score, raw_score from results where prompt_id = '{pid}' order by 1") == [
        ("m1", 1.0, 0.8123), ("m2", 0.0, 0.0)]


def test_routerdc_duplicate_questions_keep_the_first_and_quarantine_a_conflict(db_path, tmp_path):
    path = write(tmp_path / "t.json", json.dumps([
        {"question": "Q", "scores": {"m1": 1, "m2": 0}},
        {"question": "Q", "scores": {"m1": 1, "m2": 0}},
        {"question": "Q", "scores": {"m1": 1, "m2": 1}},
    ]))
    summary = ingest_file(db_path, path, progress=False)
    assert (summary.rows_accepted, summary.rows_duplicate, summary.rows_quarantined) == (2, 3, 1)
    [(row, reason)] = rows(db_path, "select row_number, reason from quarantine")
    assert row == 3 and reason.startswith('model "m2": duplicate of (') and "on row 1" in reason


# ---------------------------------------------------------------------------------------------- model costs


def test_set_default_cost(db_path, tmp_path):
    ingest_file(db_path, write(tmp_path / "a.csv", long_csv("p1,Q,gpt-x,1,")), progress=False)
    set_default_cost(db_path, "gpt-x", 0.002)
    assert rows(db_path, "select default_cost from models") == [(0.002,)]
    with pytest.raises(IngestError, match=r"unknown model 'gpt-y'.*did you mean \['gpt-x'\]"):
        set_default_cost(db_path, "gpt-y", 1.0)
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(IngestError, match="finite number >= 0"):
            set_default_cost(db_path, "gpt-x", bad)
    assert rows(db_path, "select default_cost from models") == [(0.002,)]


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


def test_progress_bar_only_on_large_files(db_path, tmp_path, capsys, monkeypatch):
    path = write(tmp_path / "a.csv", long_csv("p1,Q,m1,1,0.5"))
    ingest_file(db_path, path, progress=True)
    assert "stage" not in capsys.readouterr().err
    monkeypatch.setattr(ingest, "LARGE_FILE_BYTES", 1)
    ingest_file(db_path, write(tmp_path / "b.csv", long_csv("p2,Q,m1,1,0.5")), progress=True)
    assert "b.csv" in capsys.readouterr().err
    ingest_file(db_path, write(tmp_path / "c.csv", long_csv("p3,Q,m1,1,0.5")), progress=False)
    assert capsys.readouterr().err == ""


# ---------------------------------------------------------------------------------------------- inbox


def test_process_inbox_moves_files_to_done_and_failed(db_path, tmp_path):
    inbox = tmp_path / "inbox"
    write(inbox / "a.csv", "prompt_id,prompt,model,score,cost,split\np1,Q,m1,1,,val\np2,R,m2,1,,train\n")
    write(inbox / "b.csv", "prompt_id,prompt,model\np1,Q,m1\n")
    write(inbox / "c.csv.part", long_csv("p3,Q,m1,1,"))  # still being written
    write(inbox / "done" / "a.csv", "an older file of the same name")
    outcomes = process_inbox(db_path, inbox)
    assert [(o.name, o.status) for o in outcomes] == [("a.csv", "ingested"), ("b.csv", "failed")]
    assert outcomes[0].landed_models == ("m1",)
    assert Path(outcomes[0].moved_to) == inbox / "done" / "a.1.csv"
    assert (inbox / "done" / "a.csv").read_text() == "an older file of the same name"
    assert "missing required columns ['score', 'cost']" in (inbox / "failed" / "b.csv.reason.txt").read_text()
    assert sorted(p.name for p in inbox.iterdir()) == ["c.csv.part", "done", "failed"]
    assert outcomes[1].as_dict()["error"].endswith("(needs ['prompt_id', 'prompt', 'model', 'score', 'cost'])")
    assert process_inbox(db_path, inbox) == []


# ---------------------------------------------------------------------------------------------- bad input

BASE = long_csv("p1,Base one,m1,1,0.5", "p2,Base two,m1,0,0.5")


def _parquet_bytes(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return sink.getvalue().to_pybytes()


GOOD_PARQUET = _parquet_bytes(pa.table({
    "prompt_id": ["q1"], "prompt": ["Q"], "model": ["m9"], "score": [1.0], "cost": [0.1]}))
WIDE_GOOD = WIDE_HEADER + _wide_row(1, "s", ["Q"], {"m1": "1.0"}, {"m1": "0.1"})



def refused(pattern: str) -> tuple:
    """Expected: the file is refused with an error matching `pattern`, and the store is untouched."""
    return ("error", pattern)


def quarantined(pattern: str, accepted: int = 0, rows: int = 1) -> tuple:
    """Expected: `rows` quarantine rows whose every reason matches `pattern`; `accepted` new results."""
    return ("quarantine", pattern, accepted, rows)


# name -> (file name, content, expected outcome)
BAD_INPUTS = {
    "score above one": ("x.csv", long_csv("q1,Q,m9,1.5,0.1"), quarantined(r"^score 1\.5 is outside \[0, 1\]$")),
    "score negative": ("x.csv", long_csv("q1,Q,m9,-0.25,0.1"), quarantined(r"score -0\.25 is outside")),
    "score not a number": ("x.csv", long_csv("q1,Q,m9,high,0.1"), quarantined(r'^score "high" is not a number$')),
    "score missing": ("x.csv", long_csv("q1,Q,m9,,0.1"), quarantined(r"^score is missing$")),
    "score NaN": ("x.csv", long_csv("q1,Q,m9,NaN,0.1"), quarantined(r'^score "NaN" is not a number$')),
    "score inf": ("x.csv", long_csv("q1,Q,m9,inf,0.1"), quarantined(r"^score inf is outside \[0, 1\]$")),
    "score huge": ("x.csv", long_csv("q1,Q,m9,1e308,0.1"), quarantined(r"^score 1e\+308 is outside")),
    "score formula": ("x.csv", long_csv("q1,Q,m9,=1/2,0.1"), quarantined(r'^score "=1/2" is not a number$')),
    "cost negative": ("x.csv", long_csv("q1,Q,m9,1,-1"), quarantined(r"^cost -1\.0 is negative$")),
    "cost not a number": ("x.csv", long_csv("q1,Q,m9,1,cheap"), quarantined(r'^cost "cheap" is not a number$')),
    "cost overflow": ("x.csv", long_csv("q1,Q,m9,1,1e999"), quarantined(r"^cost inf is not finite$")),
    "cost NaN in JSON": ("x.jsonl", '{"prompt_id": "q1", "prompt": "Q", "model": "m9", "score": 1, "cost": NaN}\n',
                         quarantined(r"^cost NaN is not a number")),
    "empty prompt": ("x.csv", long_csv("q1,,m9,1,0.1"), quarantined(r"^empty prompt text$")),
    "blank prompt": ("x.csv", long_csv('q1," \t ",m9,1,0.1'), quarantined(r"^empty prompt text$")),
    "empty prompt id": ("x.csv", long_csv(",Q,m9,1,0.1"), quarantined(r"^empty prompt_id$")),
    "padded model": ("x.csv", long_csv("q1,Q,m9 ,1,0.1"), quarantined(r'model name "m9 " has leading')),
    "formula model": ("x.csv", long_csv('q1,Q,"=HYPERLINK(""x"")",1,0.1'),
                      quarantined(r'^model name "=HYPERLINK\(\\"x\\"\)" starts like a spreadsheet formula$')),
    "bad split": ("x.csv", "prompt_id,prompt,model,score,cost,split\nq1,Q,m9,1,,validation\n",
                  quarantined(r'^split "validation" is not train, val or test$')),
    "mixed types": ("x.jsonl", "".join(json.dumps(r) + "\n" for r in [
        {"prompt_id": "q1", "prompt": "Q", "model": "m9", "score": 0.5, "cost": 1},
        {"prompt_id": "q2", "prompt": "R", "model": "m9", "score": "high", "cost": 1},
        {"prompt_id": "q3", "prompt": "S", "model": "m9", "score": True, "cost": 1},
        {"prompt_id": "q4", "prompt": "T", "model": "m9", "score": [1], "cost": 1},
        {"prompt_id": 5, "prompt": "U", "model": "m9", "score": "0.5", "cost": "2"}]),
        quarantined(r'^score "(high|true|\[1\])" is not a number$', 2, 3)),
    "huge integer in JSON": ("x.jsonl", '{"prompt_id": "q1", "prompt": "Q", "model": "m9", "score": 1' + "0" * 400
                             + ', "cost": 1}\n', quarantined(r'^score "10{400}" is not a number$')),
    "duplicate key, other score": ("x.csv", long_csv("q1,Q,m9,1,0.1", "q1,Q,m9,0,0.1"),
                                   quarantined(r'^duplicate of \("q1", "m9"\) on row 1 with a different result: '
                                    r"score 1\.0 cost 0\.1 there, score 0\.0 cost 0\.1 here$", 1, 1)),
    "prompt id reused with other text": ("x.csv", long_csv("q1,Q,m9,1,0.1", "q1,Other,m8,1,0.1"),
                                         quarantined(r'^prompt_id "q1" was given a different text on row 1$', 1, 1)),
    "stored prompt, other text": ("x.csv", long_csv("p1,Not the base,m9,1,0.1"),
                                  quarantined(r'^prompt_id "p1" is already stored with a different text \(from '
                                   r".*base\.csv\)$")),
    "stored result, other score": ("x.csv", long_csv("p1,Base one,m1,0,0.5"),
                                   quarantined(r'^\("p1", "m1"\) conflicts with the stored result from .*base\.csv: '
                                    r"score 1\.0 cost 0\.5 stored, score 0\.0 cost 0\.5 here$")),
    "JSON line broken": ("x.jsonl", '{"prompt_id": "q1", "prompt": "Q", "model": "m9", "score": 1, "cost": 1}\n{"pro',
                         quarantined(r"^line 2 is not valid JSON", 1, 1)),
    "RouterDC scores not an object": ("t.json", json.dumps([{"question": "Q", "scores": 5},
                                                            {"question": "R", "scores": {"m9": 1}}]),
                                      quarantined(r"^scores 5 is not an object$", 1, 1)),
    "RouterDC model named twice": ("t.json", '[{"question": "Q", "scores": {"m9": 1, "m9": 0}}]',
                                   quarantined(r"^scores names models \['m9'\] more than once$")),
    "wide prompt not a list": ("w.csv", WIDE_GOOD + _wide_row(2, "t", ["x"], {"m1": "1.0"}, {"m1": "0.1"}).replace(
        json.dumps(repr(["x"])), "not a list"), quarantined(r"^prompt is not a Python list literal", 1, 1)),
    "wide score out of range": ("w.csv", WIDE_GOOD + _wide_row(2, "t", ["R"], {"m1": "2", "m2": "1"}, {}),
                                quarantined(r'^model "m1": score 2\.0 is outside \[0, 1\]$', 2, 1)),
    "wide row without results": ("w.csv", WIDE_GOOD + _wide_row(2, "t", ["R"], {}, {}),
                                 quarantined(r"^no model has a result on this row$", 1, 1)),
    # files that are unusable as a whole
    "empty file": ("x.csv", "", refused(r"x\.csv: the file is empty$")),
    "only whitespace": ("x.csv", "\n  \n", refused(r"x\.csv: the file is empty \(only whitespace\)$")),
    "only a header": ("x.csv", LONG_HEADER, refused(r"x\.csv: no data rows \(only a header\)$")),
    "missing columns, unknown ones": ("x.csv", "prompt_id,prompt,model,accuracy,cost\nq1,Q,m9,1,0\n",
                                      refused(r"x\.csv: missing required columns \['score'\] for the long format "
                                       r".*unrecognised columns: \['accuracy'\]$")),
    "duplicated column names": ("x.csv", "prompt_id,prompt,model,score,cost,score\nq1,Q,m9,1,0,1\n",
                                refused(r"duplicated column names in the header: \['score'\]")),
    "truncated inside a quote": ("x.csv", long_csv("q1,Q,m9,1,0.1") + 'q2,"R, unterminated',
                                 refused(r"x\.csv: not readable as CSV \(truncated or malformed\?\)")),
    "too many fields": ("x.csv", long_csv("q1,Q,m9,1,0.1,extra"),
                        refused(r"not readable as CSV.*Expected 5 columns, got 6: q1,Q,m9,1,0.1,extra")),
    "truncated last row": ("x.csv", long_csv("q1,Q,m9,1,0.1") + "q2,R,m9",
                           refused(r"not readable as CSV.*Expected 5 columns, got 3: q2,R,m9")),
    "truncated Parquet": ("x.parquet", GOOD_PARQUET[: len(GOOD_PARQUET) // 2],
                          refused(r"x\.parquet: not a readable Parquet file")),
    "Parquet score of another type": ("x.parquet", _parquet_bytes(pa.table({
        "prompt_id": ["q1"], "prompt": ["Q"], "model": ["m9"], "score": [True], "cost": [0.1]})),
        refused(r"column 'score' has type bool; it must hold numbers")),
    "truncated RouterDC JSON": ("t.json", '[{"question": "Q", "scores": {"m9": 1}}, {"quest',
                                refused(r"t\.json: not valid JSON \(truncated\?\): .* at line 1 column")),
    "JSON that is not RouterDC": ("t.json", '[{"q": "Q", "s": 1}]', refused(r"not a RouterDC file")),
    "wide cost column without scores": ("w.csv", ",sample_id,prompt,m1|total_cost\n1,s,\"['Q']\",0.1\n",
                                        refused(r"missing required columns \['m1'\]")),
    "Latin-1 text": ("x.csv", long_csv("q1,Café,m9,1,0.1").encode("latin-1"),
                     refused(r"x\.csv: not UTF-8 text: byte 0xe9 at offset 40 \(line 2\)")),
    "UTF-16 text": ("x.csv", long_csv("q1,Q,m9,1,0.1").encode("utf-16"), refused(r"the file is UTF-16")),
    "binary": ("x.csv", b"\x00\x01\x02\x03 not text", refused(r"a binary file \(NUL bytes at offset 0\)")),
    "zip archive": ("x.xlsx", b"PK\x03\x04" + b"\x00" * 20, refused(r"a zip archive")),
}


@pytest.fixture(scope="module")
def base_store(tmp_path_factory) -> Path:
    """A store holding BASE, copied by each bad-input case (cheaper than ingesting it 40 times)."""
    folder = tmp_path_factory.mktemp("base")
    db = folder / "base.duckdb"
    ingest_file(db, write(folder / "base.csv", BASE), progress=False)
    return db


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_input_ends_in_a_precise_error_or_quarantine_and_nothing_else(base_store, db_path, tmp_path, case):
    name, content, expected = BAD_INPUTS[case]
    shutil.copyfile(base_store, db_path)
    before = snapshot(db_path)
    path = write(tmp_path / "case" / name, content)
    if expected[0] == "error":
        with pytest.raises(IngestError, match=expected[1]) as raised:
            ingest_file(db_path, path, progress=False)
        assert str(path) in str(raised.value)
        assert snapshot(db_path) == before
        return
    _, pattern, accepted, quarantined = expected
    summary = ingest_file(db_path, path, progress=False)
    after = snapshot(db_path)
    assert (summary.rows_accepted, summary.rows_quarantined) == (accepted, quarantined)
    assert len(after["results"]) - len(before["results"]) == accepted
    new_quarantine = [row for row in after["quarantine"] if row not in before["quarantine"]]
    assert len(new_quarantine) == quarantined
    for row in new_quarantine:
        assert row[1] == str(path.resolve()) and row[4]  # the path and the raw input are kept
        assert all(_matches(pattern, part) for part in row[3].split("; ")), row[3]
    if accepted == 0:  # nothing but the quarantine and the file record changed
        for table in ("prompts", "models", "results", "prompt_keys"):
            assert after[table] == before[table], table
    assert len(after["ingested_files"]) == len(before["ingested_files"]) + 1


def _matches(pattern: str, text: str) -> bool:
    import re

    return re.search(pattern, text) is not None


def test_bad_input_corpus_is_large_enough():
    assert len(BAD_INPUTS) >= 20
    assert sum(expected[0] == "error" for _, _, expected in BAD_INPUTS.values()) >= 10


# ---------------------------------------------------------------------------------------------- crash safety


def test_a_failure_while_writing_rolls_the_whole_file_back(db_path, tmp_path, monkeypatch):
    ingest_file(db_path, write(tmp_path / "base.csv", BASE), progress=False)
    before = snapshot(db_path)
    real_execute = store.execute

    def failing(con, name, **params):
        real_execute(con, name, **params)
        if name == "ingest_insert_results":  # models and prompts are written by now
            raise RuntimeError("disk full")

    monkeypatch.setattr(store, "execute", failing)
    path = write(tmp_path / "new.csv", long_csv("q1,Q,m9,1,0.1"))
    with pytest.raises(RuntimeError, match="disk full"):
        ingest_file(db_path, path, progress=False)
    monkeypatch.setattr(store, "execute", real_execute)
    assert snapshot(db_path) == before
    assert ingest_file(db_path, path, progress=False).rows_accepted == 1


KILL_SCRIPT = """
import logging, sys
from pathlib import Path
logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(message)s")
from uniroute.ingest import ingest_file
ingest_file(Path(sys.argv[1]), Path(sys.argv[2]), progress=False)
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
    ingest_file(db_path, write(tmp_path / "base.csv", BASE), progress=False)
    before = snapshot(db_path)
    big = _big_long_parquet(tmp_path / "big.parquet", 200_000, 10)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
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
    summary = ingest_file(db_path, big, progress=False)
    assert (summary.rows_accepted, summary.new_prompts, summary.new_models) == (2_000_000, 200_000, 10)
    assert rows(db_path, "select count(*) from results") == [(2_000_002,)]
