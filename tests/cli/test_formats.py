"""`uniroute sql --format table|json|csv|markdown` and the Markdown table it prints."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from uniroute.cli import app
from uniroute.frame_output import markdown_table, render

runner = CliRunner()


def test_markdown_table_aligns_numbers_and_escapes_cells():
    frame = pd.DataFrame({"model": ["a|b", None], "share": [0.75, float("nan")], "n": [3, 1],
                          "clusters": [[0, 2], []], "ok": [True, False]})
    assert markdown_table(frame) == (
        "| model | share | n | clusters | ok |\n"
        "|---|---:|---:|---|---|\n"
        "| a\\|b | 0.75 | 3 | [0, 2] | True |\n"
        "|  |  | 1 | [] | False |")


def test_markdown_dates_print_as_dates():
    frame = pd.DataFrame({"day": pd.to_datetime(["2026-11-02"]), "at": pd.to_datetime(["2026-11-02 08:30"])})
    assert markdown_table(frame).splitlines()[-1] == "| 2026-11-02 | 2026-11-02 08:30:00 |"


def test_render_refuses_an_unknown_format():
    with pytest.raises(ValueError, match="unknown format 'xml'"):
        render(pd.DataFrame({"x": [1]}), "xml")


@pytest.fixture
def store_home(home, monkeypatch, tmp_path):
    monkeypatch.setenv("UNIROUTE_HOME", str(home))
    path = tmp_path / "logs.csv"
    pd.DataFrame({"prompt_id": ["p1", "p2"], "prompt": ["one", "two"], "model": "m", "score": [1, 0.5],
                  "cost": 0.5}).to_csv(path, index=False)
    assert runner.invoke(app, ["ingest", str(path)]).exit_code == 0
    return home


QUERY = "select prompt_id, score from results order by 1"


def test_sql_formats(store_home):
    def out(*args: str) -> str:
        result = runner.invoke(app, ["sql", QUERY, *args])
        assert result.exit_code == 0, result.output
        return result.stdout

    assert out("--format", "markdown") == "| prompt_id | score |\n|---|---:|\n| p1 | 1 |\n| p2 | 0.5 |\n"
    assert out("--format", "csv") == out("--csv") == "prompt_id,score\np1,1.0\np2,0.5\n"
    assert json.loads(out("--format", "json")) == json.loads(out("--json")) == [
        {"prompt_id": "p1", "score": 1.0}, {"prompt_id": "p2", "score": 0.5}]
    assert out() == out("--format", "table") and "p2" in out()


def test_sql_format_conflicts_are_one_line_errors(store_home):
    bad = runner.invoke(app, ["sql", QUERY, "--format", "xml"])
    assert bad.exit_code == 1 and "--format must be one of table, json, csv, markdown, not 'xml'" in bad.output
    both = runner.invoke(app, ["sql", QUERY, "--json", "--format", "csv"])
    assert both.exit_code == 1 and "choose one output format, not csv and json" in both.output
    assert runner.invoke(app, ["sql", QUERY, "--json", "--format", "json"]).exit_code == 0
