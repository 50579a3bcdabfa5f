"""The user views of sql/schema/005_user_views.sql against a small store whose answers are worked out by hand.

The store: a nightly build R1 (clusters 0 and 1, models a and b) and an onboarding child R2 that adds c on
the same clusters; publication V1 of R1, then V2 of R2. Psi counts give cluster 0 three validation prompts
and cluster 1 one, so cluster 0 carries 3/4 of the traffic. Costs: a 1, b 4, c 2 (the most expensive is 4).
"""

from __future__ import annotations

import math
from datetime import datetime

import pandas as pd
import pytest

from uniroute import store

T0 = datetime(2026, 11, 1, 2, 0)
T1 = datetime(2026, 11, 1, 9, 0)


def _routers() -> pd.DataFrame:
    common = {"clustering_id": "C1", "kind": "kmeans", "embedder_id": "e", "k": 2, "val_area": 0.5,
              "promoted": True, "reason": "test", "mlflow_run_id": None, "data_fingerprint": "f",
              "artifact": b"", "embedder_artifact": None}
    return pd.DataFrame([
        {**common, "router_id": "R1", "parent_id": None, "models": ["a", "b"], "created_at": T0},
        {**common, "router_id": "R2", "parent_id": "R1", "models": ["a", "b", "c"], "created_at": T1},
    ])


def _psi() -> pd.DataFrame:
    # (model, cluster): (loss, n). Cluster 0 has 3 validation prompts, cluster 1 has 1; c has no answer in 1.
    cells = {("a", 0): (0.2, 3), ("a", 1): (0.6, 1), ("b", 0): (0.4, 3), ("b", 1): (0.1, 1)}
    rows = [{"router_id": "R1", "model": m, "cluster": c, "loss": loss, "n": n} for (m, c), (loss, n) in cells.items()]
    cells |= {("c", 0): (0.1, 3), ("c", 1): (0.5, 0)}
    rows += [{"router_id": "R2", "model": m, "cluster": c, "loss": loss, "n": n} for (m, c), (loss, n) in cells.items()]
    return pd.DataFrame(rows)


def _routes(version: str, cluster0: str) -> list[dict]:
    """Budget 0.5 and normalised lambda 0 (lam = 0 / 4); cluster 0 goes to `cluster0`, cluster 1 to b."""
    return [{"version": version, "cluster": c, "grid": grid, "budget": budget, "lam": 0.0, "model": m}
            for grid, budget in (("budget", 0.5), ("lambda", None))
            for c, m in ((0, cluster0), (1, "b"))]


@pytest.fixture
def db(db_path):
    pubs = pd.DataFrame([
        {"version": "V1", "router_id": "R1", "mlflow_run_id": None, "embedder_id": "e", "pool": ["a", "b"],
         "fingerprint": "f1", "checksum": "x", "path": "/p/V1", "created_at": datetime(2026, 11, 1, 3, 0)},
        {"version": "V2", "router_id": "R2", "mlflow_run_id": None, "embedder_id": "e", "pool": ["a", "b", "c"],
         "fingerprint": "f2", "checksum": "y", "path": "/p/V2", "created_at": datetime(2026, 11, 1, 10, 0)},
    ])
    costs = pd.DataFrame({"router_id": ["R1", "R1", "R2", "R2", "R2"], "model": ["a", "b", "a", "b", "c"],
                          "cost": [1.0, 4.0, 1.0, 4.0, 2.0]})
    budgets = pd.DataFrame([
        # V1 at budget 0.5: a on cluster 0, b on cluster 1: score .75*.8 + .25*.9, cost (.75*1 + .25*4) / 4.
        {"version": "V1", "grid": "budget", "budget": 0.5, "lam": 0.0, "expected_score": 0.825,
         "expected_cost": 0.4375},
        # V2 at budget 0.5: c on cluster 0, b on cluster 1: score .75*.9 + .25*.9, cost (.75*2 + .25*4) / 4.
        {"version": "V2", "grid": "budget", "budget": 0.5, "lam": 0.0, "expected_score": 0.9, "expected_cost": 0.625},
    ])
    log = pd.DataFrame({
        "batch_id": ["b1", "b1", "b1", "b2", "b3"], "router_id": "R2", "prompt_index": [0, 1, 2, 0, 0],
        "text_hash": "h", "cluster": [0, 0, 1, 1, 0], "model": ["c", "c", "b", "b", "c"], "lam": 0.0,
        "budget": None,
        "routed_at": [datetime(2026, 11, 2, 8), datetime(2026, 11, 2, 8), datetime(2026, 11, 2, 8),
                      datetime(2026, 11, 2, 17), datetime(2026, 11, 3, 1)],
    })
    with store.opened(db_path) as con, store.transaction(con):
        store.write_frame(con, "routers", _routers())
        store.write_frame(con, "psi", _psi())
        store.write_frame(con, "router_costs", costs)
        store.write_frame(con, "publications", pubs)
        store.write_frame(con, "published_routes", pd.DataFrame(_routes("V1", "a") + _routes("V2", "c")))
        store.write_frame(con, "published_budgets", budgets)
        store.write_frame(con, "routing_log", log)
    return db_path


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
    child = _routers().iloc[[1]].assign(router_id="R3", parent_id="R2", models=[["a", "b", "c", "d"]],
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
