"""What each budget of a publication buys, on the hand-checked store (tests/sql/views_store.py): the table,
its PNG, and `uniroute report --budgets`."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from tests.sql.views_store import write_views_store
from uniroute import store
from uniroute.cli import app
from uniroute.pipeline.serving.budget_report import BudgetReportError, load_budget_report, write_budget_plot

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _report(db, version=None):
    with store.opened(db, read_only=True) as con:
        return load_budget_report(con, version)


def test_the_current_publication_by_default_with_score_cost_and_each_models_share(db_path, tmp_path):
    report = _report(write_views_store(db_path))
    assert (report.version, report.router_id) == ("V2", "R2")
    # V2 at budget 0.5: c takes cluster 0 (3/4 of the validation prompts), b cluster 1, a nothing.
    # a gets no traffic at any budget: named once rather than shown as a column of zeros.
    assert report.table().to_dict("records") == [
        {"budget": 0.5, "expected_score": 0.9, "expected_cost": 0.625, "share b": 0.25, "share c": 0.75}]
    text = report.markdown()
    assert text.startswith("# What each budget buys: V2\n\nRouter R2.")
    assert "| budget | expected_score | expected_cost | share b | share c |" in text
    assert "| 0.5 | 0.9 | 0.625 | 0.25 | 0.75 |" in text and text.endswith("No traffic at any budget: a.")
    png = write_budget_plot(report, tmp_path / "plots" / "budgets.png")
    assert png.read_bytes()[:8] == PNG_MAGIC


def test_an_older_publication_on_request_and_one_line_for_none(db_path):
    db = write_views_store(db_path)
    older = _report(db, "V1")
    assert older.table().to_dict("records") == [
        {"budget": 0.5, "expected_score": 0.825, "expected_cost": 0.4375, "share a": 0.75, "share b": 0.25}]
    with pytest.raises(BudgetReportError, match=r"no publication 'V9' in the store \(it has: V1, V2\)"):
        _report(db, "V9")
    with store.opened(db) as con:
        con.execute("delete from publications")
    with pytest.raises(BudgetReportError, match="no publication yet: run `uniroute publish` first"):
        _report(db)


def test_a_per_prompt_router_still_shows_score_and_cost(db_path, tmp_path):
    db = write_views_store(db_path)
    with store.opened(db) as con:
        con.execute("delete from published_routes where version = 'V2'")  # as a LearnedMap or K-NN publishes
    report = _report(db)
    assert report.table().to_dict("records") == [{"budget": 0.5, "expected_score": 0.9, "expected_cost": 0.625}]
    assert "routes per prompt" in report.markdown()
    assert write_budget_plot(report, tmp_path / "b.png").read_bytes()[:8] == PNG_MAGIC


def test_report_budgets_command_prints_the_table_and_draws_the_png(home, db_path, tmp_path, monkeypatch):
    write_views_store(db_path)
    monkeypatch.setenv("UNIROUTE_HOME", str(home))
    runner = CliRunner()
    png = tmp_path / "budgets.png"
    result = runner.invoke(app, ["report", "--budgets", str(png)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "| 0.5 | 0.9 | 0.625 | 0.25 | 0.75 |" in result.output and f"wrote {png}" in result.output
    assert png.read_bytes()[:8] == PNG_MAGIC
    result = runner.invoke(app, ["report", "--budgets", str(png), "--publication", "V1", "--json"])
    answer = json.loads(result.output)
    assert answer["budgets"]["version"] == "V1" and answer["budgets"]["rows"][0]["share a"] == 0.75
    result = runner.invoke(app, ["report", "--budgets", str(png), "--publication", "V9"])
    assert result.exit_code == 1 and "no publication 'V9' in the store" in result.output
    assert "Traceback" not in result.output
    result = runner.invoke(app, ["report", "--budgets", str(tmp_path / "b.txt")])
    assert result.exit_code == 1 and "name the .png file to draw" in result.output
