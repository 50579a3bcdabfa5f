"""A large RouterBench wide CSV is read and written in blocks of rows (uniroute/ingest/wide_blocks.py): the same
prompts, results, merged split rows and quarantine (with the file's row numbers) as reading it whole, on a slice of
the shared RouterBench file written to tmp. Blocks are never cut inside a repeated sample_id; the sizes are tiny."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tests.helpers import ingest
from tests.ingest.files import assert_same_ingest, ingest_in_blocks_and_whole, rows
from uniroute.ingest import IngestError
from uniroute.ingest import blocks as batches

TABLES = ("select prompt_id, text, benchmark from prompts order by 1",
          "select prompt_id, model, score, cost from results order by 1, 2",
          "select key, prompt_id from prompt_keys order by 1, 2",
          "select row_number, reason from quarantine order by 1, 2")
# Rows 100-299 of the shared file hold two sample_ids given as two rows each (161/222 and 185/280, 0-based), and
# row 160, whose partner (899) is outside the slice.
FIRST, LAST = 100, 300


@pytest.fixture
def tiny_blocks(monkeypatch):
    monkeypatch.setattr(batches, "BATCH_BYTES", 1024)
    monkeypatch.setattr(batches, "BLOCK_BYTES", 48 * 1024)
    monkeypatch.setattr(batches, "CHUNK_BYTES", 4096)
    monkeypatch.setattr(batches, "READ_BYTES", 16 * 1024)


def _slice(shared_datasets: Path, out: Path, junk: bool = True) -> Path:
    source = shared_datasets / "routerbench_subset" / "raw" / "routerbench_zs" / "arc_challenge_train.csv"
    with open(source, newline="", encoding="utf-8") as handle:
        table = list(csv.reader(handle))
    header, body = table[0], table[1 + FIRST: 1 + LAST]
    if junk:
        body[30][header.index("claude-v2")] = "junk"  # a score that is not a number: quarantined
        body[40][header.index("claude-v1|total_cost")] = "-1"  # a negative cost: quarantined
    with open(out, "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows([header, *body])
    return out


def test_wide_blocks_write_what_the_whole_file_writes(tmp_path, home, shared_datasets, tiny_blocks, empty_store):
    path = _slice(shared_datasets, tmp_path / "arc_challenge_train.csv")
    blocks = list(batches.long_batches(path, None))
    assert len(blocks) > 3 and sum(block.rows_read for block in blocks) == LAST - FIRST
    for block in blocks:  # each repeated sample_id lies in one block: its rows were merged into one prompt there
        keys = block.rows.column("sample_key").to_pylist()
        assert all(key not in other.rows.column("sample_key").to_pylist()
                   for other in blocks if other is not block for key in set(keys) - {None})
    blocked, whole, blocks_db, whole_db = ingest_in_blocks_and_whole(tmp_path, path, empty_store)
    assert_same_ingest(blocked, whole, ("format", "rows_read", "rows_accepted", "rows_duplicate", "rows_quarantined",
                                        "new_prompts", "new_models", "merged_prompts", "models", "first_problem",
                                        "ignored_columns"), blocks_db, whole_db, TABLES)
    assert whole.format == "routerbench-wide-csv" and whole.rows_quarantined == 2
    assert whole.new_prompts == LAST - FIRST - 2  # two sample_ids given as two rows each: one prompt each


def test_a_broken_row_late_in_a_wide_file_is_one_line_and_writes_nothing(tmp_path, db_path, shared_datasets,
                                                                       tiny_blocks):
    path = _slice(shared_datasets, tmp_path / "arc_challenge_train.csv", junk=False)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write("999,too,few,cells\n")
    with pytest.raises(IngestError, match=r"arc_challenge_train.csv: not readable as CSV \(truncated or "
                                          r"malformed\?\) after data row \d+: .*Expected 38 columns, got 4"):
        ingest(db_path, path, progress=False)
    for table in ("results", "prompts", "quarantine", "ingested_files"):
        assert rows(db_path, f"select count(*) from {table}") == [(0,)], table
