"""Ingestion of the real shared datasets: the raw published files give exactly the curated long.parquet."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from tests.helpers import ingest
from uniroute import store

pytestmark = pytest.mark.slow


def stored(db_path: Path, sql: str) -> pd.DataFrame:
    with store.opened(db_path) as con:
        return con.execute(sql).df()


def as_records(frame: pd.DataFrame, columns: list[str]) -> set[tuple]:
    """Rows as a set of plain tuples (None for missing values), for exact comparisons."""
    frame = frame[columns].astype(object)
    return set(frame.where(frame.notna(), None).itertuples(index=False, name=None))


def ingest_all(db_path: Path, paths: list[Path]) -> list:
    assert paths, "no files to ingest"
    return [ingest(db_path, path, progress=False) for path in paths]


def assert_reingest_adds_nothing(db_path: Path, paths: list[Path]) -> None:
    counts = "select (select count(*) from results), (select count(*) from prompts), (select count(*) from models)"
    before = stored(db_path, counts).iloc[0].tolist()
    again = ingest_all(db_path, paths)
    assert {summary.status for summary in again} == {"skipped"}
    assert stored(db_path, counts).iloc[0].tolist() == before


def test_routerbench_raw_csvs_give_the_curated_long_table(db_path, shared_datasets):
    folder = shared_datasets / "routerbench_subset"
    paths = sorted((folder / "raw" / "routerbench_zs").glob("*.csv"))
    summaries = ingest_all(db_path, paths)
    assert {s.format for s in summaries} == {"routerbench-wide-csv"}
    assert sum(s.rows_quarantined for s in summaries) == 0
    assert sum(s.merged_prompts for s in summaries) == 6  # the split pairs whose rows are in different files
    expected = pd.read_parquet(folder / "long.parquet")
    got = stored(db_path, "select r.prompt_id, p.text as prompt, r.model, r.score, r.cost, p.benchmark "
                          "from results r join prompts p using (prompt_id)")
    assert (got.prompt_id.nunique(), got.model.nunique()) == (3164, 11)
    columns = ["prompt_id", "prompt", "model", "score", "cost", "benchmark"]
    assert len(got) == len(expected) == 34_804
    assert as_records(got, columns) == as_records(expected, columns)
    assert stored(db_path, "select count(*) as n from prompts").n.iloc[0] == 3164
    assert_reingest_adds_nothing(db_path, paths)


def test_routerdc_raw_json_gives_the_curated_scores(db_path, shared_datasets):
    folder = shared_datasets / "routerdc_model7"
    paths = sorted((folder / "raw" / "datasets" / "split2_model7").glob("*.json"))
    summaries = ingest_all(db_path, paths)
    assert {s.format for s in summaries} == {"routerdc-json"}
    expected = pd.read_parquet(folder / "long.parquet")
    got = stored(db_path, "select r.prompt_id, p.text as prompt, r.model, r.score, r.raw_score "
                          "from results r join prompts p using (prompt_id)")
    # Duplicated questions with conflicting scores are quarantined (later rows), as long.parquet kept the first.
    assert sum(s.rows_quarantined for s in summaries) > 0
    assert as_records(got, ["prompt_id", "prompt", "model", "score"]) == as_records(
        expected, ["prompt_id", "prompt", "model", "score"])
    # multiple-choice files keep the published probability beside the derived correctness
    probability = got[got.raw_score.notna()]
    assert len(probability) and ((probability.raw_score > 0) == (probability.score == 1)).all()
    assert_reingest_adds_nothing(db_path, paths)


def test_mmlu_pro_long_parquet_ingests_every_row(db_path, shared_datasets):
    path = shared_datasets / "mmlu_pro_cot29" / "long.parquet"
    [summary] = ingest_all(db_path, [path])
    assert summary.format == "long-parquet"
    assert (summary.rows_accepted, summary.rows_quarantined) == (347_215, 0)
    assert (summary.new_prompts, summary.new_models) == (12_032, 29)
    expected = pd.read_parquet(path)
    got = stored(db_path, "select r.prompt_id, p.text as prompt, r.model, r.score, r.cost, p.benchmark "
                          "from results r join prompts p using (prompt_id)")
    columns = ["prompt_id", "prompt", "model", "score", "cost", "benchmark"]
    assert as_records(got, columns) == as_records(expected, columns)
    assert got.cost.isna().sum() == expected.cost.isna().sum() == 24_032  # Gemini: no cost, left for set-cost
    assert_reingest_adds_nothing(db_path, [path])
