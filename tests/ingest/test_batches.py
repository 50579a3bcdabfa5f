"""A long CSV larger than a batch is read and written block by block (uniroute/ingest/blocks.py): the same rows,
counts and quarantine reasons (with the file's row numbers) as reading it whole, one-line errors naming the file,
and nothing written when a later block is broken. The batch and block sizes are made tiny here."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest

from tests.helpers import ingest
from tests.ingest.files import ingest_in_blocks_and_whole, long_csv, rows, write
from uniroute.ingest import IngestError
from uniroute.ingest import blocks as batches

N_PROMPTS = 600
TABLES = ("select prompt_id, text, split from prompts order by 1",
          "select prompt_id, model, score, cost from results order by 1, 2",
          "select row_number, reason from quarantine order by 1")


def _lines() -> list[str]:
    out = []
    for i in range(N_PROMPTS):
        for m in range(3):
            score = "n/a" if (i * 3 + m) % 7 == 0 else f"{(i * m) % 10 / 10:g}"
            out.append(f"p{i},question number {i} about topic {i % 13},m{m},{score},0.{m + 1}")
    out.append("p5,a different text for p5,m0,1,0.1")  # a conflict with a row in the first block
    out.append("p7,question number 7 about topic 7,m1,0.7,0.2")  # an exact repeat (first rows: p7 m1 is 0.7)
    return out


def _tables(db_path: Path) -> list[list[tuple]]:
    return [rows(db_path, sql) for sql in TABLES]


@pytest.fixture
def tiny_blocks(monkeypatch):
    monkeypatch.setattr(batches, "BATCH_BYTES", 1024)
    monkeypatch.setattr(batches, "BLOCK_BYTES", 16 * 1024)
    monkeypatch.setattr(batches, "CHUNK_BYTES", 4096)
    monkeypatch.setattr(batches, "READ_BYTES", 4096)


def test_blocks_write_what_the_whole_file_writes(tmp_path, home, tiny_blocks, empty_store):
    path = write(tmp_path / "logs.csv", long_csv(*_lines()))
    assert len(list(batches.long_batches(path, None))) > 3
    blocked, whole, blocks_db, whole_db = ingest_in_blocks_and_whole(tmp_path, path, empty_store)
    for field in ("rows_read", "rows_accepted", "rows_quarantined", "new_prompts", "new_models", "models"):
        assert getattr(blocked, field) == getattr(whole, field), field
    assert blocked.rows_read == 3 * N_PROMPTS + 2 and blocked.first_problem == whole.first_problem
    assert _tables(blocks_db)[:2] == _tables(whole_db)[:2]
    quarantined = _tables(blocks_db)[2]
    assert [n for n, _ in quarantined] == [n for n, _ in _tables(whole_db)[2]]  # the file's row numbers
    assert any(n == 3 * N_PROMPTS + 1 and "text" in reason for n, reason in quarantined), quarantined[-3:]


def test_a_broken_row_in_a_later_block_is_one_line_and_writes_nothing(tmp_path, db_path, tiny_blocks):
    lines = _lines()
    lines[1500] = "p500,too,many,cells,0.1,x"
    path = write(tmp_path / "logs.csv", long_csv(*lines))
    with pytest.raises(IngestError, match=r"logs.csv: not readable as CSV \(truncated or malformed\?\) after data "
                                          r"row \d+: .*Expected 5 columns, got 6"):
        ingest(db_path, path, progress=False)
    assert rows(db_path, "select count(*) from results") == [(0,)]
    assert rows(db_path, "select count(*) from ingested_files") == [(0,)]


def test_a_bad_byte_late_in_the_file_names_its_offset_and_line(tmp_path, db_path, tiny_blocks):
    text = long_csv(*_lines()).encode()
    at = text.index(b"\np400,") + 1
    path = write(tmp_path / "logs.csv", text[:at] + b"\xff" + text[at:])
    line = text[:at].count(b"\n") + 1
    with pytest.raises(IngestError, match=rf"not UTF-8 text: byte 0xff at offset {at} \(line {line}\)"):
        ingest(db_path, path, progress=False)


def test_a_large_parquet_file_in_blocks_writes_what_the_whole_file_writes(tmp_path, tiny_blocks, empty_store,
                                                                          monkeypatch):
    monkeypatch.setattr(batches, "BLOCK_ROWS", 250)
    frame = pd.DataFrame([line.split(",") for line in _lines()], columns=["prompt_id", "prompt", "model", "score",
                                                                         "cost"])
    frame["score"] = pd.to_numeric(frame.score, errors="coerce")  # "n/a": a missing score, quarantined
    frame["cost"] = frame.cost.astype(float)
    path = tmp_path / "logs.parquet"
    frame.to_parquet(path, index=False, row_group_size=400)
    assert len(list(batches.long_batches(path, None))) > 3
    blocked, whole, blocks_db, whole_db = ingest_in_blocks_and_whole(tmp_path, path, empty_store)
    for field in ("rows_read", "rows_accepted", "rows_quarantined", "new_prompts", "models", "first_problem"):
        assert getattr(blocked, field) == getattr(whole, field), field
    assert blocked.rows_quarantined > 0 and _tables(blocks_db)[:2] == _tables(whole_db)[:2]
    assert [n for n, _ in _tables(blocks_db)[2]] == [n for n, _ in _tables(whole_db)[2]]


def _jsonl_lines() -> list[str]:
    out = [json.dumps({"prompt_id": line.split(",")[0], "prompt": line.split(",")[1], "model": line.split(",")[2],
                       "score": line.split(",")[3], "cost": float(line.split(",")[4])}) for line in _lines()]
    out[40] = ""  # blank lines are not rows
    out[900] = "not json at all"  # a quarantined row
    out[1200] = "[1, 2]"  # a JSON array: quarantined
    out[1300] = json.dumps({"prompt_id": "p433", "prompt": ["not", "text"], "model": "m1", "score": 1, "cost": 0.1})
    return out


def test_jsonl_blocks_write_what_the_whole_file_writes(tmp_path, tiny_blocks, empty_store):
    path = write(tmp_path / "logs.jsonl", "\n".join(_jsonl_lines()) + "\n")
    assert len(list(batches.long_batches(path, None))) > 3
    blocked, whole, blocks_db, whole_db = ingest_in_blocks_and_whole(tmp_path, path, empty_store)
    for field in ("format", "rows_read", "rows_accepted", "rows_quarantined", "new_prompts", "models",
                  "first_problem"):
        assert getattr(blocked, field) == getattr(whole, field), field
    assert blocked.format == "long-jsonl" and blocked.rows_read == 3 * N_PROMPTS + 1
    assert _tables(blocks_db)[:2] == _tables(whole_db)[:2]
    quarantined = _tables(blocks_db)[2]
    # the same rows; a conflict with an earlier block's row is reported as one with the stored row
    assert [n for n, _ in quarantined] == [n for n, _ in _tables(whole_db)[2]]
    assert (900, "line 900 is not valid JSON (Expecting value at column 1)") in quarantined
    assert (1200, "line 1200 is a JSON list") in quarantined


@pytest.mark.parametrize("bad, message", [
    (json.dumps({"prompt_id": "p9", "prompt": "a \ud800 b", "model": "m1", "score": 1, "cost": 0.1}),
     r"line 1701: text that cannot be UTF-8 \(a lone surrogate '\\ud800'\)"),
    ('{"prompt_id": "p9", "prompt": ' + "[" * 100_000 + "]" * 100_000 + "}", r"line 1701: JSON nested too deeply"),
])
def test_a_bad_row_in_a_late_jsonl_block_is_named_and_nothing_is_written(tmp_path, db_path, tiny_blocks, bad,
                                                                        message):
    lines = _jsonl_lines()  # one blank line before: line 1701 of the rows is the file's 1702nd line
    lines[1701] = bad
    path = write(tmp_path / "logs.jsonl", "\n".join(lines) + "\n")
    assert sum(1 for _ in zip(range(3), batches.long_batches(path, None), strict=False)) == 3  # several blocks first
    with pytest.raises(IngestError, match=rf"logs.jsonl: {message}"):
        ingest(db_path, path, progress=False)
    for table in ("results", "prompts", "quarantine", "ingested_files"):
        assert rows(db_path, f"select count(*) from {table}") == [(0,)], table


def test_a_jsonl_file_whose_lines_lack_a_column_fails_after_its_last_block(tmp_path, db_path, tiny_blocks):
    lines = [line.replace('"cost"', '"price"') for line in _jsonl_lines()]
    path = write(tmp_path / "logs.jsonl", "\n".join(lines) + "\n")
    with pytest.raises(IngestError, match=r"logs.jsonl: missing required columns \['cost'\]"):
        ingest(db_path, path, progress=False)
    assert rows(db_path, "select count(*) from results") == [(0,)]


def test_the_csv_reader_does_not_read_the_file_ahead(tmp_path, tiny_blocks):
    # Arrow's streaming reader reads up to 32 of its blocks ahead: with blocks as large as ours that was the first
    # 256 MB of a file, held while the first block was checked. Its blocks are READ_BYTES now.
    lines = _lines() * 40
    path = write(tmp_path / "logs.csv", long_csv(*lines))
    before = pa.total_allocated_bytes()
    blocks = batches.long_batches(path, None)
    next(blocks)
    time.sleep(0.5)  # the reading ahead runs on Arrow's threads: let it go as far as it would
    held = pa.total_allocated_bytes() - before
    # 150 kB here (reads of 4 kB); reads of a block's size (16 kB) held 570 kB
    assert path.stat().st_size > 2_000_000 and held < 16 * batches.BLOCK_BYTES, held
    blocks.close()
