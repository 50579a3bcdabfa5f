"""A large pairwise file is read and written in blocks of battles (uniroute/ingest/pairwise_blocks.py), in each of
its four formats: the same battles, prompts, models and quarantine (with the file's row numbers) as reading it
whole. The battles are made in tmp from a slice of the shared RouterBench results (who of two models scored
higher on a prompt), with bad rows among them; the sizes are tiny."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pandas as pd
import pytest

from tests.helpers import ingest
from tests.ingest.files import assert_same_ingest, ingest_in_blocks_and_whole, rows
from uniroute.ingest import IngestError
from uniroute.ingest import blocks as batches

TABLES = ("select prompt_id, text, benchmark from prompts order by 1",
          "select model from models order by 1",
          "select prompt_id, model_a, model_b, preference from battles order by 1, 2, 3",
          "select row_number, reason from quarantine order by 1, 2")
N_PROMPTS = 60


@pytest.fixture
def tiny_blocks(monkeypatch):
    monkeypatch.setattr(batches, "BATCH_BYTES", 1024)
    monkeypatch.setattr(batches, "BLOCK_BYTES", 16 * 1024)
    monkeypatch.setattr(batches, "BLOCK_ROWS", 100)
    monkeypatch.setattr(batches, "CHUNK_BYTES", 500)
    monkeypatch.setattr(batches, "READ_BYTES", 4096)


def _battles(shared_datasets: Path) -> pd.DataFrame:
    logs = pd.read_parquet(shared_datasets / "routerbench_subset" / "long.parquet")
    logs = logs[logs.prompt_id.isin(logs.prompt_id.drop_duplicates().iloc[:N_PROMPTS])]
    models = sorted(logs.model.unique())[:4]
    score = logs.set_index(["prompt_id", "model"]).score
    out = []
    for (prompt_id, prompt, benchmark), (a, b) in itertools.product(
            logs[["prompt_id", "prompt", "benchmark"]].drop_duplicates().itertuples(index=False),
            itertools.combinations(models, 2)):
        sa, sb = score[(prompt_id, a)], score[(prompt_id, b)]
        winner = "model_a" if sa > sb else "model_b" if sb > sa else "tie"
        out.append({"prompt_id": prompt_id, "prompt": prompt, "model_a": a, "model_b": b, "winner": winner,
                    "benchmark": benchmark})
    battles = pd.DataFrame(out)
    battles.loc[17, "winner"] = "nobody"  # not a winner: quarantined
    battles.loc[150, "model_b"] = ""  # no model: quarantined
    # a conflict with the prompt's earlier rows, first in its block when blocks are 100 rows (Parquet): still only
    # that row is quarantined, as when read whole
    battles.loc[200, "prompt"] = "another text for the same prompt id"
    return pd.concat([battles, battles.iloc[[5, 6]]], ignore_index=True)  # two repeats of early battles


def _write(battles: pd.DataFrame, folder: Path, fmt: str) -> Path:
    path = folder / f"battles.{fmt}"
    records = battles.to_dict("records")
    if fmt == "csv":
        battles.to_csv(path, index=False)
    elif fmt == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    elif fmt == "json":
        records[40] = ["not", "an", "object"]  # quarantined
        path.write_text(json.dumps(records, indent=1), encoding="utf-8")
    else:
        battles.to_parquet(path, index=False, row_group_size=120)
    return path


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "json", "parquet"])
def test_pairwise_blocks_write_what_the_whole_file_writes(tmp_path, home, shared_datasets, tiny_blocks, empty_store,
                                                          fmt):
    path = _write(_battles(shared_datasets), tmp_path, fmt)
    blocks = list(batches.long_batches(path, None))
    assert len(blocks) > 3 and sum(block.rows_read for block in blocks) == N_PROMPTS * 6 + 2
    blocked, whole, blocks_db, whole_db = ingest_in_blocks_and_whole(tmp_path, path, empty_store)
    assert_same_ingest(blocked, whole, ("format", "rows_read", "rows_accepted", "rows_duplicate", "rows_quarantined",
                                        "new_prompts", "new_models", "models", "ignored_columns", "unit"),
                       blocks_db, whole_db, TABLES[:-1])
    assert whole.format == f"pairwise-{fmt}" and whole.rows_duplicate == 2
    assert whole.rows_quarantined >= 3 + (fmt == "json")
    # the quarantine's row numbers, not its reasons: a conflict with an earlier block reads as one with the store
    assert [n for n, _ in rows(blocks_db, TABLES[-1])] == [n for n, _ in rows(whole_db, TABLES[-1])]


def test_a_pairwise_json_broken_late_is_refused_as_when_read_whole(tmp_path, db_path, shared_datasets,
                                                                   tiny_blocks):
    path = _write(_battles(shared_datasets), tmp_path, "json")
    text = path.read_text(encoding="utf-8")
    path.write_text(text[: len(text) * 4 // 5], encoding="utf-8")
    with pytest.raises(IngestError) as blocked:
        list(batches.long_batches(path, None))
    with pytest.raises(IngestError, match=r"not valid JSON \(truncated\?\)"):
        ingest(db_path, path, progress=False)
    batches.BATCH_BYTES = 10 ** 9
    with pytest.raises(IngestError) as whole:
        ingest(db_path, path, progress=False)
    assert str(blocked.value) == str(whole.value)
    assert rows(db_path, "select count(*) from battles") == [(0,)]


def test_a_column_only_late_lines_give_counts_for_the_whole_file_as_when_read_whole(tmp_path, home, shared_datasets,
                                                                                   tiny_blocks):
    records = _battles(shared_datasets).rename(columns={"prompt_id": "question_id"}).to_dict("records")
    records[-1] = {**records[-1], "prompt_id": records[-1]["question_id"]}  # prompt_id, which wins, only at the end
    path = tmp_path / "battles.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    assert len(list(batches.long_batches(path, None))) > 3
    whole_db, blocks_db = tmp_path / "whole" / "uniroute.duckdb", tmp_path / "blocks" / "uniroute.duckdb"
    whole_db.parent.mkdir()
    blocks_db.parent.mkdir()
    blocked = ingest(blocks_db, path, progress=False)
    batches.BATCH_BYTES = 10 ** 9
    whole = ingest(whole_db, path, progress=False)
    assert (blocked.rows_accepted, blocked.rows_quarantined) == (whole.rows_accepted, whole.rows_quarantined)
    assert whole.rows_accepted <= 1  # every other line lacks the file's prompt id column
    for sql in TABLES[2:]:
        assert [r[0] for r in rows(blocks_db, sql)] == [r[0] for r in rows(whole_db, sql)], sql
