"""Outcomes files are read and checked in batches (a 10^6-row JSON lines file read whole peaked at 11x its size):
with a batch of two rows, every format gives the rows, row numbers, counts and one-line refusals of a whole read,
and one id given two scores in two batches is still refused over the whole file."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from uniroute import store
from uniroute.ingest import outcomes
from uniroute.ingest.staging import IngestError

ROWS = [{"decision_id": f"d{i}", "score": i % 2, "cost": 0.01 * i} for i in range(6)] + [
    {"decision_id": "d2", "score": 0, "cost": 0.02}]  # row 7 repeats row 3 exactly: a duplicate, in another batch


def _write(path: Path, rows: list[dict]) -> Path:
    frame = pd.DataFrame(rows)
    if path.suffix == ".csv":
        frame.to_csv(path, index=False)
    elif path.suffix == ".parquet":
        frame.to_parquet(path, index=False)
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _load(db_path: Path, path: Path) -> outcomes.OutcomesLoaded:
    with store.session(db_path, "test") as s:
        return outcomes.load_outcomes(s.con, path, str(path), "hash", batch_rows=2)


def _count(db_path: Path, table: str) -> int:
    with store.opened(db_path, read_only=True) as con:
        return int(con.execute(f"select count(*) from {table}").fetchone()[0])


@pytest.mark.parametrize("name", ["o.csv", "o.jsonl", "o.parquet"])
def test_a_file_loads_in_batches_as_it_would_whole(db_path, tmp_path, name):
    path = _write(tmp_path / name, ROWS)
    batches = list(outcomes._batches(path, 2))
    assert [len(b) for b in batches] == [2, 2, 2, 1]  # never more than a batch in Python at once
    assert [n for b in batches for n in b.row_number] == list(range(1, 8))
    loaded = _load(db_path, path)
    # No decision is stored: each distinct outcome waits for its decision; the exact repeat is a duplicate.
    assert (loaded.rows_read, loaded.rows_waiting, loaded.rows_duplicate) == (7, 6, 1)
    assert _count(db_path, "pending_outcomes") == 6


@pytest.mark.parametrize("name", ["o.csv", "o.jsonl", "o.parquet"])
def test_a_clash_across_batches_and_a_bad_row_in_a_late_batch_are_refused_whole(db_path, tmp_path, name):
    clash = _write(tmp_path / f"clash-{name}", [*ROWS[:4], {"decision_id": "d0", "score": 1, "cost": 0.0}])
    with pytest.raises(IngestError, match=r"decision_id 'd0' is given different scores \(row 1: 0, row 5: 1\)"):
        _load(db_path, clash)
    late = _write(tmp_path / f"late-{name}", [*ROWS[:5], {"decision_id": "d9", "score": 7, "cost": 0.0}])
    with pytest.raises(IngestError, match=r"row 6: score must be a number in \[0, 1\]"):
        _load(db_path, late)
    assert _count(db_path, "pending_outcomes") == 0  # nothing of either file written


def test_a_later_batch_without_a_required_key_names_its_row(db_path, tmp_path):
    path = tmp_path / "o.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS[:4]) + '{"decision_id": "d8"}\n')
    with pytest.raises(IngestError, match="row 5: score must be a number in"):
        _load(db_path, path)
