"""The user views of sql/schema/005_user_views.sql against a small store whose answers are worked out by hand
(tests/sql/views_store.py describes it)."""

from __future__ import annotations

import math
from datetime import datetime

import pytest

from tests.sql.views_store import T1, routers_frame, write_views_store
from uniroute import store


@pytest.fixture
def db(db_path):
    return write_views_store(db_path)


def _rows(db_path, sql: str) -> list[dict]:
    """Rows as dicts of plain Python values (DuckDB's own conversion: None, date, list)."""
    with store.opened(db_path, read_only=True) as con:
        result = con.execute(sql)
        names = [d[0] for d in result.description]
        return [dict(zip(names, row, strict=True)) for row in result.fetchall()]


def test_cluster_shares_weigh_clusters_by_validation_prompts(db):
    rows = _rows(db, "select router_id, cluster, val_prompts, share from cluster_shares order by 1, 2")
    assert [(r["router_id"], r["cluster"], r["val_prompts"], r["share"]) for r in rows] == [
        ("R1", 0, 3, 0.75), ("R1", 1, 1, 0.25), ("R2", 0, 3, 0.75), ("R2", 1, 1, 0.25)]


def test_traffic_share_per_model_at_each_budget_includes_models_without_traffic(db):
    rows = _rows(db, "select version, model, traffic_share, n_clusters, clusters from traffic_share "
                     "where grid = 'budget' and budget = 0.5 order by version, model")
    assert [(r["version"], r["model"], r["traffic_share"], r["n_clusters"], r["clusters"]) for r in rows] == [
        ("V1", "a", 0.75, 1, [0]), ("V1", "b", 0.25, 1, [1]),
        ("V2", "a", 0.0, 0, []), ("V2", "b", 0.25, 1, [1]), ("V2", "c", 0.75, 1, [0])]
    current = _rows(db, "select distinct version from current_traffic_share")
    assert current == [{"version": "V2"}]
    shares = _rows(db, "select version, grid, sum(traffic_share) as total from traffic_share group by 1, 2")
    assert all(math.isclose(r["total"], 1.0) for r in shares)


def test_lambda_grid_is_keyed_by_normalised_lambda(db):
    rows = _rows(db, "select distinct version, normalised_lambda from traffic_share where grid = 'lambda'")
    assert sorted((r["version"], r["normalised_lambda"]) for r in rows) == [("V1", 0.0), ("V2", 0.0)]


def test_publication_models_score_each_model_alone(db):
    rows = _rows(db, "select model, cost, normalised_cost, val_score from publication_models "
                     "where version = 'V2' order by model")
    got = [(r["model"], r["cost"], r["normalised_cost"], round(r["val_score"], 6)) for r in rows]
    # a: .75*.8 + .25*.4 = .7; b: .75*.6 + .25*.9 = .675; c: .75*.9 + .25*.5 = .8
    assert got == [("a", 1.0, 0.25, 0.7), ("b", 4.0, 1.0, 0.675), ("c", 2.0, 0.5, 0.8)]


def test_savings_by_budget_compare_with_the_best_single_model(db):
    rows = _rows(db, "select * from savings_by_budget order by version")
    v1, v2 = rows
    # V1: best single model a (.7 at cost .25); routing scores .825 at cost .4375: 75% more expensive.
    assert (v1["best_model"], v1["best_model_score"], v1["best_model_cost"]) == ("a", pytest.approx(0.7), 0.25)
    assert v1["score_change"] == pytest.approx(0.125) and v1["cost_saving"] == pytest.approx(-0.75)
    assert v1["matches_best_model"]
    # V2: best single model c (.8 at cost .5); routing scores .9 at cost .625.
    assert (v2["best_model"], v2["best_model_score"], v2["best_model_cost"]) == ("c", pytest.approx(0.8), 0.5)
    assert v2["score_change"] == pytest.approx(0.1) and v2["cost_saving"] == pytest.approx(-0.25)
    assert v2["normalised_lambda"] == 0.0


def test_onboarded_models_and_where_they_take_traffic(db):
    assert _rows(db, "select router_id, model, build_id, onboarded_by, onboarded_at from onboarded_models") == [
        {"router_id": "R2", "model": "c", "build_id": "R1", "onboarded_by": "R2", "onboarded_at": T1}]
    rows = _rows(db, "select version, model, grid, traffic_share, clusters from onboarded_traffic order by grid")
    assert [(r["version"], r["model"], r["grid"], r["traffic_share"], r["clusters"]) for r in rows] == [
        ("V2", "c", "budget", 0.75, [0]), ("V2", "c", "lambda", 0.75, [0])]


def test_onboarding_a_grandchild_keeps_the_first_onboarding_router(db):
    child = routers_frame().iloc[[1]].assign(router_id="R3", parent_id="R2", models=[["a", "b", "c", "d"]],
                                        created_at=datetime(2026, 11, 2))
    with store.opened(db) as con:
        store.write_frame(con, "routers", child)
    rows = _rows(db, "select model, build_id, onboarded_by from onboarded_models where router_id = 'R3' order by 1")
    assert rows == [{"model": "c", "build_id": "R1", "onboarded_by": "R2"},
                    {"model": "d", "build_id": "R1", "onboarded_by": "R3"}]


def test_publication_diff_says_what_changed_between_two_publications(db):
    rows = _rows(db, "select * from publication_diff where from_version = 'V1' and to_version = 'V2' "
                     "and grid = 'budget' order by model")
    got = [(r["model"], r["pool_change"], r["share_before"], r["share_after"], r["share_change"],
            r["clusters_gained"], r["clusters_lost"]) for r in rows]
    # b keeps cluster 1 and is not listed; a loses cluster 0 to the newcomer c.
    assert got == [("a", None, 0.75, 0.0, -0.75, [], [0]), ("c", "added", 0.0, 0.75, 0.75, [0], [])]
    assert all(r["consecutive"] and r["same_clusters"] and r["budget"] == 0.5 for r in rows)
    assert _rows(db, "select count(*) as n from publication_diff where from_version = 'V2'") == [{"n": 0}]


def test_routing_decisions_by_day(db):
    rows = _rows(db, "select day, model, decisions, share_of_day, batches from routing_decisions_by_day order by 1, 2")
    got = [(str(r["day"]), r["model"], r["decisions"], r["share_of_day"], r["batches"]) for r in rows]
    assert got == [("2026-11-02", "b", 2, 0.5, 2), ("2026-11-02", "c", 2, 0.5, 1), ("2026-11-03", "c", 1, 1.0, 1)]


def test_model_evidence_counts_validation_answers_per_cluster(db):
    rows = _rows(db, "select cluster, val_answers, cluster_val_prompts, coverage, uses_fallback from model_evidence "
                     "where router_id = 'R2' and model = 'c' order by cluster")
    assert rows == [
        {"cluster": 0, "val_answers": 3, "cluster_val_prompts": 3, "coverage": 1.0, "uses_fallback": False},
        {"cluster": 1, "val_answers": 0, "cluster_val_prompts": 1, "coverage": 0.0, "uses_fallback": True}]


def test_views_answer_on_an_empty_store(db_path):
    with store.opened(db_path):
        pass
    for view in ("current_publication", "traffic_share", "savings_by_budget", "onboarded_traffic",
                 "publication_diff", "routing_decisions_by_day", "model_evidence"):
        assert store.read_only_query(db_path, f"select * from {view}").empty, view


def test_every_sql_example_of_the_sql_page_runs_in_the_sandbox(db):
    """docs/sql.md's examples are what users copy: each is a read-only statement the sandbox accepts and DuckDB
    answers on a store with every view (names as written; `'...'` placeholders stay strings)."""
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "sql.md").read_text()
    examples = re.findall(r"^\| `(\w+)` \| `(select [^`]+)`", page, flags=re.M)
    rows = re.findall(r"^\| `(\w+)` \|", page, flags=re.M)
    assert len(examples) >= 30 and len(examples) == len(rows)  # every view's row carries a runnable example
    for view, sql in examples:
        assert view in sql, (view, sql)
        store.read_only_query(db, sql, store.Sandbox())
