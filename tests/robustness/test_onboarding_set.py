"""`uniroute onboarding-set`: the chosen validation prompts round-trip — the new model's answers to exactly those
prompts, dropped in the inbox, onboard it; `--model` continues after a first batch with prompts not asked yet."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from tests.robustness.conftest import NEWCOMER
from uniroute import store
from uniroute.cli import app
from uniroute.pipeline.pool import registry

runner = CliRunner()


def _run(*args: str, code: int = 0) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == code, result.output
    return result.stdout


def _answers(logs: pd.DataFrame, chosen: Path, inbox: Path, name: str) -> set[str]:
    """The newcomer's answers to exactly the chosen prompts, dropped into the inbox as a CSV."""
    ids = [json.loads(line)["prompt_id"] for line in chosen.read_text().splitlines()]
    rows = logs[(logs.model == NEWCOMER) & logs.prompt_id.isin(ids)].drop(columns=["split"])
    assert len(rows) == len(ids)
    inbox.mkdir(parents=True, exist_ok=True)
    rows.to_csv(inbox / name, index=False)
    return set(ids)


def test_the_chosen_prompts_onboard_the_model_from_the_inbox_and_model_continues(pool, logs, tmp_path, monkeypatch):
    monkeypatch.setenv("UNIROUTE_MLFLOW", "false")
    first = tmp_path / "first.jsonl"
    line = _run("onboarding-set", "--size", "12", "--out", str(first))
    assert line.startswith("12 of ") and f"wrote {first}" in line
    records = [json.loads(x) for x in first.read_text().splitlines()]
    assert [r["rank"] for r in records] == list(range(1, 13)) and all(r["prompt"] for r in records)
    with store.opened(pool.db_path, read_only=True) as con:
        val = set(con.execute("select prompt_id from prompt_splits where split = 'val'").df().prompt_id)
    assert {r["prompt_id"] for r in records} <= val and len({r["prompt_id"] for r in records}) == 12

    asked = _answers(logs, first, pool.inbox_dir, "newcomer-1.csv")
    _run("inbox")
    with store.opened(pool.db_path, read_only=True) as con:
        champion = registry.load_champion(con)
        answered = set(con.execute("select prompt_id from results where model = ?", [NEWCOMER]).df().prompt_id)
    assert NEWCOMER in champion.router.models and answered == asked

    more = tmp_path / "more.csv"
    shown = json.loads(_run("onboarding-set", "--size", "8", "--model", NEWCOMER, "--out", str(more), "--json"))
    assert (shown["answered"], shown["chosen"]) == (12, 8)
    following = pd.read_csv(more)
    assert not set(following.prompt_id) & asked and set(following.prompt_id) <= val
    again = tmp_path / "again.csv"
    _run("onboarding-set", "--size", "8", "--model", NEWCOMER, "--out", str(again))
    assert pd.read_csv(again).prompt_id.tolist() == following.prompt_id.tolist()  # the same store, the same choice


def test_bad_requests_are_one_line_and_write_nothing(pool, tmp_path):
    for args, words in [
        (["--size", "0"], "--size must be at least 1, got 0"),
        (["--size", "5", "--strategy", "greedy"], "unknown strategy 'greedy'"),
    ]:
        out = tmp_path / "set.jsonl"
        result = runner.invoke(app, ["onboarding-set", *args, "--out", str(out)])
        assert result.exit_code == 1 and words in result.stderr and len(result.stderr.strip().splitlines()) == 1
        assert not out.exists()
    wrong = runner.invoke(app, ["onboarding-set", "--size", "5", "--out", str(tmp_path / "set.txt")])
    assert wrong.exit_code == 1 and "write the onboarding set as .jsonl or .csv" in wrong.stderr


def test_onboarding_cost_says_what_each_onboarding_used_and_bought(pool, logs, tmp_path, monkeypatch):
    monkeypatch.setenv("UNIROUTE_MLFLOW", "false")
    chosen = tmp_path / "set.jsonl"
    _run("onboarding-set", "--size", "15", "--out", str(chosen))
    asked = _answers(logs, chosen, tmp_path / "answers", "newcomer.csv")
    _run("onboard", "--results", str(tmp_path / "answers" / "newcomer.csv"))
    shown = json.loads(_run("sql", f"select * from onboarding_cost where model = '{NEWCOMER}'", "--json"))
    assert len(shown) == 1
    row = shown[0]
    expected_cost = logs[(logs.model == NEWCOMER) & logs.prompt_id.isin(asked)].cost.sum()
    assert row["answers_used"] == 15 and row["answers_cost"] == pytest.approx(expected_cost)
    assert 1 <= row["clusters_answered"] <= row["clusters"] and 0 < row["mean_interval_width"] < 1
    with store.opened(pool.db_path, read_only=True) as con:
        assert row["router_id"] == registry.load_champion(con).router_id
        # only the onboarded model: the pool's models are carried over unchanged
        assert con.execute("select count(*) from onboarding_cost").fetchone()[0] == 1
