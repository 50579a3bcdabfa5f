"""Ingestion: formats by content, one transaction per file, quarantine with reasons, merges, the inbox."""

from __future__ import annotations

import hashlib
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.helpers import ingest
from tests.ingest.files import WIDE_HEADER, long_csv, rows, wide_row, write


def test_long_csv_lands_prompts_models_results(db_path, tmp_path):
    path = write(tmp_path / "a.csv", long_csv(
        "p1,What is 1+1?,m1,1,0.5", "p1,What is 1+1?,m2,0,", "p2,Name a colour.,m1,0.25,0.5"))
    summary = ingest(db_path, path, progress=False)
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
    summary = ingest(db_path, path, progress=False)
    assert summary.format == f"long-{kind}"
    assert rows(db_path, "select prompt_id, text, benchmark, split from prompts order by 1") == [
        ("p1", "First, with a comma", "b", "val"), ("p2", 'Second "quoted"\nline', None, None)]
    assert rows(db_path, "select prompt_id, model, score, cost from results order by 1, 2") == [
        ("p1", "m1", 1.0, 0.5), ("p1", "m2", 0.0, None), ("p2", "m1", 0.5, 2.0)]


def test_float32_parquet_numbers_are_the_decimals_written_so_the_same_log_as_csv_is_a_duplicate(db_path, tmp_path):
    # pandas/polars often store costs as float32: 0.1 is 0.10000000149 there, and must not "conflict" with 0.1
    csv_path = write(tmp_path / "a.csv", long_csv("p1,One,m1,0.37,0.1", "p2,Two,m1,1,0.3"))
    table = pa.table({"prompt_id": ["p1", "p2"], "prompt": ["One", "Two"], "model": ["m1", "m1"],
                      "score": pa.array([0.37, 1.0], pa.float32()), "cost": pa.array([0.1, 0.3], pa.float32())})
    pq.write_table(table, tmp_path / "a.parquet")
    assert ingest(db_path, csv_path, progress=False).rows_accepted == 2
    again = ingest(db_path, tmp_path / "a.parquet", progress=False)
    assert (again.rows_accepted, again.rows_duplicate, again.rows_quarantined) == (0, 2, 0)
    assert rows(db_path, "select score, cost from results order by prompt_id") == [(0.37, 0.1), (1.0, 0.3)]


# ---------------------------------------------------------------------------------------------- RouterBench


def test_routerbench_wide_csv_rows_and_costs(db_path, tmp_path):
    path = write(tmp_path / "rb.csv", WIDE_HEADER + wide_row(
        7, "arc.1", ["Question: ", "why?"], {"m1": "1.0", "m2": "0.0", "m3": "nan"},
        {"m1": "0.25", "m2": "0.5", "m3": "0.75"}))
    summary = ingest(db_path, path, progress=False)
    assert summary.format == "routerbench-wide-csv" and summary.rows_accepted == 2
    assert rows(db_path, "select prompt_id, text, benchmark from prompts") == [("rb0-7", "Question: why?", "arc")]
    assert rows(db_path, "select model, score, cost from results order by 1") == [
        ("m1", 1.0, 0.25), ("m2", 0.0, 0.5)]


def test_routerbench_prompt_split_over_two_rows_is_merged(db_path, tmp_path):
    # sample s1: row 10 has only m3, row 11 the other two (disjoint: one prompt, id and text of the fuller row);
    # sample s2: rows 20 and 21 both have m1 (overlapping: two prompts sharing a sample_id)
    text = WIDE_HEADER
    text += wide_row(10, "s1", ["Q1", "Q1"], {"m3": "1.0"}, {"m1": "2", "m2": "2", "m3": "2"})
    text += wide_row(11, "s1", ["Q1"], {"m1": "1.0", "m2": "0.0"}, {"m1": "1", "m2": "1", "m3": "1"})
    text += wide_row(20, "s2", ["Q2"], {"m1": "1.0"}, {"m1": "1"})
    text += wide_row(21, "s2", ["Q3"], {"m1": "0.0"}, {"m1": "1"})
    summary = ingest(db_path, write(tmp_path / "rb.csv", text), progress=False)
    assert summary.new_prompts == 3
    assert rows(db_path, "select prompt_id, text from prompts order by 1") == [
        ("rb0-11", "Q1"), ("rb0-20", "Q2"), ("rb0-21", "Q3")]
    assert rows(db_path, "select model, score, cost from results where prompt_id = 'rb0-11' order by 1") == [
        ("m1", 1.0, 1.0), ("m2", 0.0, 1.0), ("m3", 1.0, 2.0)]


@pytest.mark.parametrize("fuller_first", [True, False])
def test_routerbench_split_prompt_merges_across_files_in_either_order(db_path, tmp_path, fuller_first):
    partial = write(tmp_path / "x.csv", WIDE_HEADER + wide_row(10, "s1", ["Q1", "Q1"], {"m3": "1.0"}, {"m3": "2"}))
    fuller = write(tmp_path / "y.csv", WIDE_HEADER + wide_row(
        11, "s1", ["Q1"], {"m1": "1.0", "m2": "0.0"}, {"m1": "1", "m2": "1"}))
    first, second = (fuller, partial) if fuller_first else (partial, fuller)
    ingest(db_path, first, progress=False)
    summary = ingest(db_path, second, progress=False)
    assert summary.merged_prompts == 1 and summary.new_prompts == 0
    assert rows(db_path, "select prompt_id, text from prompts") == [("rb0-11", "Q1")]
    assert rows(db_path, "select prompt_id, model, score, cost from results order by 2") == [
        ("rb0-11", "m1", 1.0, 1.0), ("rb0-11", "m2", 0.0, 1.0), ("rb0-11", "m3", 1.0, 2.0)]
    assert rows(db_path, "select key, prompt_id from prompt_keys") == [("s1", "rb0-11")]


# ---------------------------------------------------------------------------------------------- RouterDC


def test_routerdc_generative_scores_are_kept_and_probabilities_become_correctness(db_path, tmp_path):
    grid = write(tmp_path / "gsm_like-test.json", json.dumps([
        {"question": "Q1", "scores": {"m1": 0.3, "m2": 1}}, {"question": "Q2", "scores": {"m1": 0, "m2": 0.7}}]))
    # Another question: the same text with other scores would be quarantined as a conflict (test_bad_input).
    prob = write(tmp_path / "mc_like_train.json", json.dumps([
        {"question": "QM1", "scores": {"m1": 0.8123, "m2": 0}, "cluster_id": 3}]))
    assert ingest(db_path, grid, progress=False).format == "routerdc-json"
    ingest(db_path, prob, progress=False)
    pid = "rdc-" + hashlib.sha1(b"gsm_like\0Q1").hexdigest()[:16]
    assert rows(db_path, f"select model, score, raw_score from results where prompt_id = '{pid}' order by 1") == [
        ("m1", 0.3, None), ("m2", 1.0, None)]
    pid = "rdc-" + hashlib.sha1(b"mc_like\0QM1").hexdigest()[:16]  # the _train suffix is not the task's name
    assert rows(db_path, f"select model, score, raw_score from results where prompt_id = '{pid}' order by 1") == [
        ("m1", 1.0, 0.8123), ("m2", 0.0, 0.0)]


def test_routerdc_duplicate_questions_keep_the_first_and_quarantine_a_conflict(db_path, tmp_path):
    path = write(tmp_path / "t.json", json.dumps([
        {"question": "Q", "scores": {"m1": 1, "m2": 0}},
        {"question": "Q", "scores": {"m1": 1, "m2": 0}},
        {"question": "Q", "scores": {"m1": 1, "m2": 1}},
    ]))
    summary = ingest(db_path, path, progress=False)
    assert (summary.rows_accepted, summary.rows_duplicate, summary.rows_quarantined) == (2, 3, 1)
    [(row, reason)] = rows(db_path, "select row_number, reason from quarantine")
    assert row == 3 and reason.startswith('model "m2": duplicate of (') and "on row 1" in reason


# ---------------------------------------------------------------------------------------------- model costs
