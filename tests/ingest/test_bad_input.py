"""Ingestion: formats by content, one transaction per file, quarantine with reasons, merges, the inbox."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.helpers import ingest
from tests.ingest.files import BASE, LONG_HEADER, WIDE_HEADER, long_csv, snapshot, wide_row, write
from uniroute.ingest import IngestError

# ---------------------------------------------------------------------------------------------- bad input



def _parquet_bytes(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return sink.getvalue().to_pybytes()


GOOD_PARQUET = _parquet_bytes(pa.table({
    "prompt_id": ["q1"], "prompt": ["Q"], "model": ["m9"], "score": [1.0], "cost": [0.1]}))
WIDE_GOOD = WIDE_HEADER + wide_row(1, "s", ["Q"], {"m1": "1.0"}, {"m1": "0.1"})



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
    # Hostile or odd content: one line naming the file, never a Python traceback.
    "JSON nesting bomb": ("x.json", "[" * 100_000 + "]" * 100_000, refused(r"JSON nested too deeply")),
    "JSONL nesting bomb": ("x.jsonl", '{"prompt_id": "q1", "prompt": ' + "[" * 100_000 + "]" * 100_000 + "}\n",
                           refused(r"JSON nested too deeply")),
    "lone surrogate in JSONL": ("x.jsonl", '{"prompt_id": "q1", "prompt": "a \\ud800 b", "model": "m9", '
                                '"score": 1, "cost": 0.1}\n', refused(r"cannot be UTF-8 .*surrogate")),
    "Parquet list column": ("x.parquet", _parquet_bytes(pa.table({
        "prompt_id": ["q1"], "prompt": [["a", "b"]], "model": ["m9"], "score": [1.0], "cost": [0.1]})),
        refused(r"a column holds values of the wrong type")),
    "cost overflow": ("x.csv", long_csv("q1,Q,m9,1,1e999"), quarantined(r"^cost inf is not finite$")),
    # Finite, yet the model's mean cost overflowed and every later build, publish and doctor crashed.
    "cost huge": ("x.csv", long_csv("q1,Q,m9,1,1e308"), quarantined(r"^cost 1e\+308 is above the ceiling of 1e\+06")),
    "model name with a newline": ("x.jsonl", '{"prompt_id": "q1", "prompt": "Q", "model": "m\\nine", "score": 1, '
                                  '"cost": 0.1}\n', quarantined(r"^model name .* contains a control or bidirectional")),
    "model name with a right-to-left override": (
        "x.jsonl", '{"prompt_id": "q1", "prompt": "Q", "model": "gpt\\u202e4", "score": 1, "cost": 0.1}\n',
        quarantined(r"^model name .* contains a control or bidirectional-override character$")),
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
    "wide prompt not a list": ("w.csv", WIDE_GOOD + wide_row(2, "t", ["x"], {"m1": "1.0"}, {"m1": "0.1"}).replace(
        json.dumps(repr(["x"])), "not a list"), quarantined(r"^prompt is not a Python list literal", 1, 1)),
    "wide score out of range": ("w.csv", WIDE_GOOD + wide_row(2, "t", ["R"], {"m1": "2", "m2": "1"}, {}),
                                quarantined(r'^model "m1": score 2\.0 is outside \[0, 1\]$', 2, 1)),
    "wide row without results": ("w.csv", WIDE_GOOD + wide_row(2, "t", ["R"], {}, {}),
                                 quarantined(r"^no model has a result on this row$", 1, 1)),
    # files that are unusable as a whole
    "empty file": ("x.csv", "", refused(r"x\.csv: the file is empty$")),
    "only whitespace": ("x.csv", "\n  \n", refused(r"x\.csv: the file is empty \(only whitespace\)$")),
    "only a header": ("x.csv", LONG_HEADER, refused(r"x\.csv: no data rows \(only a header\)$")),
    "missing columns, unknown ones": ("x.csv", "prompt_id,prompt,model,accuracy,cost\nq1,Q,m9,1,0\n",
                                      refused(r"x\.csv: missing required columns \['score'\] for the long format "
                                       r".*unrecognised columns: \['accuracy'\]$")),
    "upper-case column names": ("x.csv", "PROMPT_ID,prompt,model,Score,cost\nq1,Q,m9,1,0\n",
                                refused(r"missing required columns \['prompt_id', 'score'\] .*\(names are lower-case: "
                                        r"rename 'PROMPT_ID' to 'prompt_id', 'Score' to 'score'\)$")),
    "semicolon-separated": ("x.csv", "prompt_id;prompt;model;score;cost\nq1;Q;m9;1;0\n",
                            refused(r"the header is one column holding ';': save the file with commas as "
                                    r"separators\)$")),
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
    ingest(db, write(folder / "base.csv", BASE), progress=False)
    return db


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_input_ends_in_a_precise_error_or_quarantine_and_nothing_else(base_store, db_path, tmp_path, case):
    name, content, expected = BAD_INPUTS[case]
    shutil.copyfile(base_store, db_path)
    before = snapshot(db_path)
    path = write(tmp_path / "case" / name, content)
    if expected[0] == "error":
        with pytest.raises(IngestError, match=expected[1]) as raised:
            ingest(db_path, path, progress=False)
        assert str(path) in str(raised.value)
        assert snapshot(db_path) == before
        return
    _, pattern, accepted, quarantined = expected
    summary = ingest(db_path, path, progress=False)
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
