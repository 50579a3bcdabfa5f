"""Test files for ingestion: writing inputs, reading back what the store holds."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import copy_of_empty_store
from tests.helpers import ingest
from uniroute import store
from uniroute.ingest import IngestSummary
from uniroute.ingest import blocks as batches

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
        for table in ("prompts", "models", "results", "battles", "prompt_keys", "ingested_files", "quarantine"):
            out[table] = sorted(con.execute(f"select * from {table}").fetchall(), key=repr)
    return out


def rows(db_path: Path, sql: str) -> list[tuple]:
    with store.opened(db_path) as con:
        return con.execute(sql).fetchall()


def ingest_in_blocks_and_whole(tmp_path: Path, path: Path, empty_store: Path
                               ) -> tuple[IngestSummary, IngestSummary, Path, Path]:
    """path ingested in blocks (the test's tiny sizes, set with monkeypatch) into one store, then read whole into
    another, both copies of the session's empty store: (the blocked result, the whole one, the blocked store's
    path, the whole one's)."""
    whole_db = copy_of_empty_store(empty_store, tmp_path / "whole" / "uniroute.duckdb")
    blocks_db = copy_of_empty_store(empty_store, tmp_path / "blocks" / "uniroute.duckdb")
    blocked = ingest(blocks_db, path, progress=False)
    batches.BATCH_BYTES = 10 ** 9  # the test's monkeypatch restores it: read whole
    whole = ingest(whole_db, path, progress=False)
    return blocked, whole, blocks_db, whole_db


def assert_same_ingest(blocked: IngestSummary, whole: IngestSummary, fields: tuple[str, ...], blocks_db: Path,
                       whole_db: Path, queries: tuple[str, ...]) -> None:
    """The blocked ingest reported and wrote what the whole read did: each result field, each query's rows."""
    for field in fields:
        assert getattr(blocked, field) == getattr(whole, field), field
    for sql in queries:
        assert rows(blocks_db, sql) == rows(whole_db, sql), sql


def long_csv(*lines: str) -> str:
    return LONG_HEADER + "".join(line + "\n" for line in lines)


# ---------------------------------------------------------------------------------------------- long format


def wide_row(index: int, sample: str, prompt: list[str], scores: dict[str, str], costs: dict[str, str]) -> str:
    cells = [str(index), sample, json.dumps(repr(prompt)), "arc"]
    cells += [scores.get(m, "") for m in ("m1", "m2", "m3")]
    cells += ['"[\'an answer, with a comma\']"']
    cells += [costs.get(m, "") for m in ("m1", "m2", "m3")]
    cells += ["m1"]
    return ",".join(cells) + "\n"


BASE = long_csv("p1,Base one,m1,1,0.5", "p2,Base two,m1,0,0.5")
