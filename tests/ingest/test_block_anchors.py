"""A prompt whose rows fall in two blocks of a large file, given another text (or split) first in the later block:
only that row is quarantined, as when the file is read whole (uniroute/ingest/block_anchors.py). Before, the
conflicting row fixed the prompt's text within its block and the block's agreeing rows were quarantined too."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.ingest.files import assert_same_ingest, ingest_in_blocks_and_whole, rows
from uniroute.ingest import blocks as batches

TABLES = ("select prompt_id, text, split from prompts order by 1",
          "select prompt_id, model, score from results order by 1, 2")


@pytest.fixture
def tiny_blocks(monkeypatch):
    monkeypatch.setattr(batches, "BATCH_BYTES", 1024)
    monkeypatch.setattr(batches, "BLOCK_ROWS", 250)


@pytest.mark.parametrize("column, value", [("prompt", "another text for p83"), ("split", "test")])
def test_a_conflict_first_in_a_later_block_quarantines_that_row_only(tmp_path, home, tiny_blocks, empty_store, column,
                                                                     value):
    frame = pd.DataFrame([{"prompt_id": f"p{i}", "prompt": f"question {i}", "model": f"m{m}", "score": 1.0,
                           "cost": 0.1, "split": "val"} for i in range(200) for m in range(3)])
    # p83's rows are 249-251 (0-based): the first in the first block of 250 rows, two in the second
    frame.loc[250, column] = value
    path = tmp_path / "logs.parquet"
    frame.to_parquet(path, index=False)
    blocked, whole, blocks_db, whole_db = ingest_in_blocks_and_whole(tmp_path, path, empty_store)
    assert (blocked.rows_accepted, blocked.rows_quarantined) == (whole.rows_accepted, whole.rows_quarantined) == (
        599, 1)
    assert rows(blocks_db, "select row_number from quarantine") == [(251,)] == rows(whole_db,
                                                                                 "select row_number from quarantine")
    assert_same_ingest(blocked, whole, (), blocks_db, whole_db, TABLES)
