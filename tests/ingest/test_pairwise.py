"""Pairwise preferences: formats by content, bad input in one line each, idempotence, one transaction."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.helpers import ingest
from tests.ingest.files import BASE, rows, snapshot, write
from tests.ingest.test_bad_input import quarantined, refused
from uniroute import store
from uniroute.ingest import IngestError, staged_file

HEADER = "prompt_id,prompt,model_a,model_b,winner\n"


def pairs_csv(*lines: str, header: str = HEADER) -> str:
    return header + "".join(line + "\n" for line in lines)


GOOD = pairs_csv("b1,Battle one,m1,m2,model_a", "b2,Battle two,m2,m3,tie", "b3,Battle three,m1,m3,tie (bothbad)")
RECORDS = [
    {"question_id": "b1", "prompt": "Battle one", "model_a": "m1", "model_b": "m2", "winner": "model_a"},
    {"question_id": "b2", "prompt": "Battle two", "model_a": "m2", "model_b": "m3", "winner": "tie"},
    {"question_id": "b3", "prompt": "Battle three", "model_a": "m1", "model_b": "m3", "winner": "tie (bothbad)"},
]


def _parquet_bytes(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return sink.getvalue().to_pybytes()


@pytest.mark.parametrize(("name", "content", "fmt"), [
    ("b.csv", GOOD, "pairwise-csv"),
    ("b.jsonl", "".join(json.dumps(r) + "\n" for r in RECORDS), "pairwise-jsonl"),
    ("b.json", json.dumps(RECORDS), "pairwise-json"),
    ("b.parquet", _parquet_bytes(pa.Table.from_pylist(RECORDS)), "pairwise-parquet"),
])
def test_every_pairwise_format_is_detected_by_content_and_staged_alike(tmp_path, name, content, fmt) -> None:
    staged = staged_file(write(tmp_path / name, content))
    assert staged.format == fmt and staged.rows_read == 3
    got = staged.rows.select(["prompt_id", "model_a", "model_b", "winner", "preference"]).to_pylist()
    assert got == [
        {"prompt_id": "b1", "model_a": "m1", "model_b": "m2", "winner": "model_a", "preference": 1.0},
        {"prompt_id": "b2", "model_a": "m2", "model_b": "m3", "winner": "tie", "preference": 0.5},
        {"prompt_id": "b3", "model_a": "m1", "model_b": "m3", "winner": "tie (bothbad)", "preference": 0.5},
    ]


def test_battles_land_in_their_own_table_with_prompts_and_models(db_path, tmp_path) -> None:
    summary = ingest(db_path, write(tmp_path / "b.csv", GOOD), progress=False)
    assert (summary.format, summary.rows_accepted, summary.new_prompts, summary.new_models) == ("pairwise-csv", 3, 3, 3)
    assert "3 battles accepted" in summary.line()
    assert summary.landed_models == ("m1", "m2", "m3")  # no split given: every battle may be validation evidence
    assert rows(db_path, "select prompt_id, model_a, model_b, winner, preference from battles order by 1") == [
        ("b1", "m1", "m2", "model_a", 1.0), ("b2", "m2", "m3", "tie", 0.5), ("b3", "m1", "m3", "tie (bothbad)", 0.5)]
    assert rows(db_path, "select count(*) from results") == [(0,)]
    assert rows(db_path, "select model from models order by 1") == [("m1",), ("m2",), ("m3",)]


def test_reingesting_changes_nothing_and_the_same_battle_reversed_is_a_duplicate(db_path, tmp_path) -> None:
    path = write(tmp_path / "b.csv", GOOD)
    ingest(db_path, path, progress=False)
    before = snapshot(db_path)
    assert ingest(db_path, path, progress=False).status == "skipped"
    assert snapshot(db_path) == before
    # The same battle told from the other side (b vs a, the opposite winner) is already stored.
    again = ingest(db_path, write(tmp_path / "again.csv", pairs_csv("b1,Battle one,m2,m1,model_b")), progress=False)
    assert (again.rows_accepted, again.rows_duplicate, again.rows_quarantined) == (0, 1, 0)
    assert rows(db_path, "select count(*) from battles") == [(3,)]


def test_a_continuous_preference_is_the_outcome_for_model_a(db_path, tmp_path) -> None:
    content = pairs_csv("j1,Judge one,m1,m2,0.8", "j2,Judge two,m2,m3,", header="prompt_id,prompt,model_a,model_b,"
                        "preference\n")
    summary = ingest(db_path, write(tmp_path / "j.csv", content), progress=False)
    assert (summary.rows_accepted, summary.rows_quarantined) == (1, 1)
    assert rows(db_path, "select prompt_id, winner, preference from battles") == [("j1", None, 0.8)]
    assert rows(db_path, "select row_number, reason from quarantine") == [(2, "no winner and no preference")]


def test_a_failure_while_writing_battles_rolls_the_whole_file_back(db_path, tmp_path, monkeypatch) -> None:
    ingest(db_path, write(tmp_path / "base.csv", BASE), progress=False)
    before = snapshot(db_path)
    real_execute = store.execute

    def failing(con, name, **params):
        real_execute(con, name, **params)
        if name == "ingest_pairs_insert":  # models, prompts and battles are written by now
            raise RuntimeError("disk full")

    monkeypatch.setattr(store, "execute", failing)
    path = write(tmp_path / "b.csv", GOOD)
    with pytest.raises(RuntimeError, match="disk full"):
        ingest(db_path, path, progress=False)
    monkeypatch.setattr(store, "execute", real_execute)
    assert snapshot(db_path) == before
    assert ingest(db_path, path, progress=False).rows_accepted == 3


# name -> (file name, content, expected). The base store holds BASE (pointwise p1, p2 on m1) and the battle
# ("s1", m1 vs m2, m1 won).
BAD_PAIRS = {
    "unknown winner": ("x.csv", pairs_csv("q1,Q,m1,m2,model_c"),
                       quarantined(r'^winner "model_c" is not one of model_a, model_b, tie, tie \(bothbad\)$')),
    "winner in other case": ("x.csv", pairs_csv("q1,Q,m1,m2,Model_A"), quarantined(r'^winner "Model_A" is not one')),
    "a model against itself": ("x.csv", pairs_csv("q1,Q,m1,m1,model_a"),
                               quarantined(r'^model_a and model_b are both "m1": a model against itself$')),
    "missing prompt text": ("x.csv", pairs_csv("q1,,m1,m2,model_a"), quarantined(r"^empty prompt text$")),
    "missing prompt id": ("x.csv", pairs_csv(",Q,m1,m2,model_a"), quarantined(r"^empty prompt_id$")),
    "missing model_b": ("x.csv", pairs_csv("q1,Q,m1,,model_a"), quarantined(r"^empty model_b$")),
    "padded model": ("x.csv", pairs_csv("q1,Q, m1,m2,model_a"),
                     quarantined(r'^model_a " m1" has leading or trailing whitespace$')),
    "formula model": ("x.csv", pairs_csv("q1,Q,m1,=cmd,model_a"),
                      quarantined(r'^model_b "=cmd" starts like a spreadsheet formula$')),
    "conflicting duplicates": ("x.csv", pairs_csv("q1,Q,m1,m2,model_a", "q1,Q,m2,m1,model_a"),
                               quarantined(r'^duplicate of the battle \("q1", "m2" vs "m1"\) on row 1 with a '
                                           r'different outcome: "m1" won there, "m2" won here$', 1, 1)),
    "conflict with a stored battle": ("x.csv", pairs_csv("s1,Stored battle,m2,m1,tie"),
                                      quarantined(r'^the battle \("s1", "m2" vs "m1"\) conflicts with the stored one '
                                                  r'from .*s\.csv: "m1" won there, tie here$')),
    "prompt stored with other text": ("x.csv", pairs_csv("p1,Not the base,m1,m2,model_a"),
                                      quarantined(r'^prompt_id "p1" is already stored with a different text')),
    "preference outside [0, 1]": ("x.csv", pairs_csv("q1,Q,m1,m2,1.5", header=HEADER.replace("winner", "preference")),
                                  quarantined(r"^preference 1\.5 is outside \[0, 1\]$")),
    "preference not a number": ("x.csv", pairs_csv("q1,Q,m1,m2,high", header=HEADER.replace("winner", "preference")),
                                quarantined(r'^preference "high" is not a number$')),
    "winner against preference": ("x.csv", pairs_csv("q1,Q,m1,m2,model_a,0.2",
                                                     header="prompt_id,prompt,model_a,model_b,winner,preference\n"),
                                  quarantined(r'^winner "model_a" disagrees with preference 0\.2$')),
    "bad split": ("x.csv", pairs_csv("q1,Q,m1,m2,model_a,validation", header=HEADER.rstrip() + ",split\n"),
                  quarantined(r'^split "validation" is not train, val or test$')),
    "JSON entry not an object": ("x.json", json.dumps([RECORDS[0], "oops"]),
                                 quarantined(r'^entry 2 is a JSON str, not an object$', 1, 1)),
    "missing winner column": ("x.csv", "prompt_id,prompt,model_a,model_b\nq1,Q,m1,m2\n",
                              refused(r"x\.csv: missing required columns \['winner \(or preference\)'\] for "
                                      r"pairwise preferences")),
    "missing prompt column": ("x.csv", "question_id,model_a,model_b,winner\nq1,m1,m2,tie\n",
                              refused(r"missing required columns \['prompt'\]")),
    "only a header": ("x.csv", HEADER, refused(r"x\.csv: no data rows \(only a header\)$")),
    "truncated JSON list": ("x.json", json.dumps(RECORDS)[:60], refused(r"x\.json: not valid JSON \(truncated\?\)")),
}


@pytest.fixture(scope="module")
def base_store(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("pairs_base")
    db = folder / "base.duckdb"
    ingest(db, write(folder / "base.csv", BASE), progress=False)
    ingest(db, write(folder / "s.csv", pairs_csv("s1,Stored battle,m1,m2,model_a")), progress=False)
    return db


@pytest.mark.parametrize("case", list(BAD_PAIRS))
def test_bad_pairwise_input_ends_in_one_clear_line_and_nothing_half_written(base_store, db_path, tmp_path, case):
    name, content, expected = BAD_PAIRS[case]
    shutil.copyfile(base_store, db_path)
    before = snapshot(db_path)
    path = write(tmp_path / "case" / name, content)
    if expected[0] == "error":
        with pytest.raises(IngestError, match=expected[1]) as raised:
            ingest(db_path, path, progress=False)
        assert str(path) in str(raised.value) and "\n" not in str(raised.value)
        assert snapshot(db_path) == before
        return
    _, pattern, accepted, quarantined_rows = expected
    summary = ingest(db_path, path, progress=False)
    after = snapshot(db_path)
    assert (summary.rows_accepted, summary.rows_quarantined) == (accepted, quarantined_rows)
    assert len(after["battles"]) - len(before["battles"]) == accepted
    new = [row for row in after["quarantine"] if row not in before["quarantine"]]
    assert len(new) == quarantined_rows
    for row in new:
        assert row[1] == str(path.resolve()) and row[4]  # the file and the raw row are kept
        assert re.search(pattern, row[3]), row[3]
    if accepted == 0:
        for table in ("prompts", "models", "results", "battles"):
            assert after[table] == before[table], table
