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


def same_text_conflicts(db_path: Path) -> set[tuple[str, str]]:
    """(prompt_id, model) of rows quarantined because the same text under another prompt_id got another score
    from the same model: two answers to one question cannot both stand (the first one seen stays)."""
    import json

    rows = stored(db_path, "select reason, raw from quarantine")
    assert rows.reason.str.contains("has the same text as").all(), rows.reason.tolist()[:3]
    return {(json.loads(raw)["prompt_id"], json.loads(raw)["model"]) for raw in rows.raw}


def same_text_conflicts_any(db_path: Path) -> set[tuple[str, str]]:
    """(prompt_id, model) of the rows quarantined for a same-text conflict, among all quarantined rows."""
    import json

    rows = stored(db_path, "select raw from quarantine where reason like '%has the same text as%'")
    return {(json.loads(raw)["prompt_id"], json.loads(raw)["model"]) for raw in rows.raw}


def without(records: set[tuple], keys: set[tuple[str, str]]) -> set[tuple]:
    """records (prompt_id, prompt, model, ...) less those whose (prompt_id, model) is in keys."""
    return {r for r in records if (r[0], r[2]) not in keys}


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
    same_text_conflicts(db_path)  # every quarantined row is a same-text conflict
    assert sum(s.rows_quarantined for s in summaries) == 2  # two wide rows, each with several models' results
    assert sum(s.merged_prompts for s in summaries) == 6  # the split pairs whose rows are in different files
    expected = pd.read_parquet(folder / "long.parquet")
    got = stored(db_path, "select r.prompt_id, p.text as prompt, r.model, r.score, r.cost, p.benchmark "
                          "from results r join prompts p using (prompt_id)")
    assert (got.prompt_id.nunique(), got.model.nunique()) == (3164, 11)
    columns = ["prompt_id", "prompt", "model", "score", "cost", "benchmark"]
    # The curated table holds 8 (text, model) pairs scored differently under two ids; one row of each is gone.
    groups = expected.groupby(["prompt", "model"]).agg(ids=("prompt_id", "nunique"), scores=("score", "nunique"))
    clashing = set(groups[(groups.ids > 1) & (groups.scores > 1)].index)
    removed = as_records(expected, columns) - as_records(got, columns)
    assert len(clashing) == len(removed) == 8 and as_records(got, columns) <= as_records(expected, columns)
    assert {(r[1], r[2]) for r in removed} == clashing
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
    # Duplicated questions with conflicting scores are quarantined (later rows), as long.parquet kept the first;
    # one question also appears in two tasks (two ids) with two scores from one model: the later one is too.
    assert sum(s.rows_quarantined for s in summaries) > 0
    cross_task = {key for key in same_text_conflicts_any(db_path)}
    assert len(cross_task) == 1
    assert as_records(got, ["prompt_id", "prompt", "model", "score"]) == without(as_records(
        expected, ["prompt_id", "prompt", "model", "score"]), cross_task)
    # multiple-choice files keep the published probability beside the derived correctness
    probability = got[got.raw_score.notna()]
    assert len(probability) and ((probability.raw_score > 0) == (probability.score == 1)).all()
    assert_reingest_adds_nothing(db_path, paths)


def test_mmlu_pro_long_parquet_ingests_every_row(db_path, shared_datasets):
    path = shared_datasets / "mmlu_pro_cot29" / "long.parquet"
    [summary] = ingest_all(db_path, [path])
    assert summary.format == "long-parquet"
    expected = pd.read_parquet(path)
    # MMLU-Pro repeats some questions word for word under other ids; where one model scored the copies
    # differently, the later row is quarantined (computed here independently, in file order).
    first = expected.groupby(["prompt", "model"], sort=False).score.transform("first")
    first_id = expected.groupby(["prompt", "model"], sort=False).prompt_id.transform("first")
    clash = (expected.prompt_id != first_id) & (expected.score != first)
    conflicts = set(zip(expected.prompt_id[clash], expected.model[clash], strict=True))
    assert len(conflicts) == 101 and same_text_conflicts(db_path) == conflicts
    assert (summary.rows_accepted, summary.rows_quarantined) == (347_215 - 101, 101)
    assert (summary.new_prompts, summary.new_models) == (12_032, 29)
    got = stored(db_path, "select r.prompt_id, p.text as prompt, r.model, r.score, r.cost, p.benchmark "
                          "from results r join prompts p using (prompt_id)")
    columns = ["prompt_id", "prompt", "model", "score", "cost", "benchmark"]
    assert as_records(got, columns) == without(as_records(expected, columns), conflicts)
    assert got.cost.isna().sum() == 24_032 - sum(m.startswith("gemini") for _, m in conflicts)  # Gemini: no cost
    assert_reingest_adds_nothing(db_path, [path])
