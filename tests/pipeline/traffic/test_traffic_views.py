"""The traffic views (sql/schema/012_traffic_views.sql) on a store written by hand, checked against numbers worked
out by hand: two clusters (centroids (0, 0) and (10, 0)), models a (cost 1) and b (cost 4), five decisions over
two days, four outcomes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from uniroute import store
from uniroute.store.embeddings import root_of, write_partition

PSI = [("a", 0, 0.2, 0.1, 0.3), ("a", 1, 0.6, 0.4, 0.8), ("b", 0, 0.1, 0.05, 0.2), ("b", 1, 0.2, 0.1, 0.3)]
# (decision, day, cluster, model, centroid distance, explored)
DECISIONS = [("d1", "2026-11-24", 0, "a", 0.5, False), ("d2", "2026-11-24", 0, "a", 4.0, False),
             ("d3", "2026-11-24", 1, "b", 0.5, False), ("d4", "2026-11-25", 1, "b", 0.2, False),
             ("d5", "2026-11-25", 0, "a", 0.1, True)]
OUTCOMES = [("d1", 1.0, 0.9), ("d2", 0.0, 1.2), ("d3", 1.0, None), ("d4", 0.5, 5.0)]
# (prompt, split, cluster, embedding): training distances to their centroid 1, 2, 3 and 4; p5 is validation
PROMPTS = [("p1", "train", 0, [1.0, 0.0]), ("p2", "train", 0, [0.0, 2.0]), ("p3", "train", 0, [0.0, 3.0]),
           ("p4", "train", 1, [10.0, 4.0]), ("p5", "val", 1, [10.0, 0.0])]


@pytest.fixture(scope="module")
def views(tmp_path_factory) -> dict[str, pd.DataFrame]:
    db_path = tmp_path_factory.mktemp("views") / "uniroute.duckdb"
    with store.session(db_path, "test") as s:
        con = s.con
        con.execute("insert into routers (router_id, origin, clustering_id, kind, embedder_id, k, models, promoted, "
                    "reason, data_fingerprint, router, created_at) values ('r1', 'build', 'c1', 'kmeans', 'e1', 2, "
                    "['a', 'b'], true, 'test', 'fp', ''::blob, now())")
        con.executemany("insert into router_costs values ('r1', ?, ?)", [("a", 1.0), ("b", 4.0)])
        con.executemany("insert into psi (router_id, model, cluster, loss, n, routing_loss, error_lo, error_hi, "
                        "sparse) values ('r1', ?, ?, ?, 10, ?, ?, ?, false)",
                        [(m, c, loss, loss, lo, hi) for m, c, loss, lo, hi in PSI])
        con.executemany("insert into centroids values ('c1', ?, ?)", [(0, [0.0, 0.0]), (1, [10.0, 0.0])])
        for prompt, split, cluster, _vector in PROMPTS:
            con.execute("insert into prompts (prompt_id, text, text_hash, source_file, first_seen) "
                        "values (?, ?, ?, 'f', now())", [prompt, prompt, f"h{prompt}"])
            con.execute("insert into prompt_splits values (?, ?, 'logs', now())", [prompt, split])
            con.execute("insert into cluster_assignments values ('c1', ?, ?)", [prompt, cluster])
        # the training prompts' vectors, as the workers write them: a partition of the embeddings dataset
        write_partition(root_of(con), "e1", [f"h{p}" for p, *_ in PROMPTS],
                        np.array([v for *_, v in PROMPTS], dtype=np.float32))
        for decision, day, cluster, model, distance, explored in DECISIONS:
            con.execute("insert into decisions (decision_id, schema_version, decided_at, source, router_id, "
                        "text_hash, cluster, centroid_distance, model, lam, propensity, explored, source_file, "
                        "file_hash, ingested_at) values (?, 1, cast(? as timestamp) + interval 10 hour, 'cli', "
                        "'r1', 'h', ?, ?, ?, 0.0, 1.0, ?, 'f', 'x', now())",
                        [decision, day, cluster, distance, model, explored])
        con.executemany("insert into outcomes values (?, ?, ?, null, null, 'f', 'x', now())", OUTCOMES)
    names = ("traffic_by_day", "traffic_by_cluster", "traffic_spend_by_day", "realized_quality", "traffic_savings",
             "traffic_cluster_mix", "traffic_drift", "routing_decisions", "routing_outcomes")
    with store.opened(db_path, read_only=True) as con:
        return {name: con.execute(f"select * from {name}").df() for name in names}


def _rows(frame: pd.DataFrame, columns: list[str], by: list[str]) -> list[tuple]:
    return [tuple(round(v, 4) if isinstance(v, float) else v for v in row)
            for row in frame.sort_values(by)[columns].itertuples(index=False)]


def test_decisions_and_outcomes_one_row_each(views):
    assert len(views["routing_decisions"]) == 5 and len(views["routing_outcomes"]) == 4
    assert views["routing_outcomes"].set_index("decision_id").model.to_dict() == {"d1": "a", "d2": "a", "d3": "b",
                                                                                  "d4": "b"}


def test_decisions_and_share_per_model_per_day_and_per_cluster(views):
    by_day = views["traffic_by_day"].assign(day=lambda f: f.day.astype(str))
    assert _rows(by_day, ["day", "model", "decisions", "share_of_day", "explored"], ["day", "model"]) == [
        ("2026-11-24", "a", 2, 0.6667, 0), ("2026-11-24", "b", 1, 0.3333, 0),
        ("2026-11-25", "a", 1, 0.5, 1), ("2026-11-25", "b", 1, 0.5, 0)]
    assert _rows(views["traffic_by_cluster"], ["cluster", "model", "decisions", "share_of_cluster"], ["cluster"]) == [
        (0, "a", 3, 1.0), (1, "b", 2, 1.0)]


def test_expected_against_realised_spend_per_day(views):
    spend = views["traffic_spend_by_day"].assign(day=lambda f: f.day.astype(str))
    assert _rows(spend, ["day", "decisions", "expected_spend", "decisions_with_cost", "expected_spend_with_cost",
                         "realized_spend", "realized_over_expected"], ["day"]) == [
        ("2026-11-24", 3, 6.0, 2, 2.0, 2.1, 1.05), ("2026-11-25", 2, 5.0, 1, 4.0, 5.0, 1.25)]


def test_realized_quality_beside_what_psi_expected(views):
    # (a, 0): scores 1, 0 -> mean 0.5, sd 0.7071, half-width 1.96 * 0.7071 / sqrt(2) = 0.98 -> [0, 1] clipped
    # (b, 1): scores 1, 0.5 -> mean 0.75, sd 0.3536, half-width 0.49 -> [0.26, 1] clipped
    assert _rows(views["realized_quality"], ["model", "cluster", "n_outcomes", "realized_score", "realized_lo",
                                             "realized_hi", "expected_score", "expected_lo", "expected_hi"],
                 ["model"]) == [("a", 0, 2, 0.5, 0.0, 1.0, 0.8, 0.7, 0.9), ("b", 1, 2, 0.75, 0.26, 1.0, 0.8, 0.7, 0.9)]


def test_savings_against_always_the_best_single_model(views):
    # validation scores: a 0.5 * 0.8 + 0.5 * 0.4 = 0.6, b 0.5 * 0.9 + 0.5 * 0.8 = 0.85: b is the best single model
    savings = views["traffic_savings"].assign(day=lambda f: f.day.astype(str))
    assert _rows(savings, ["day", "best_model", "decisions", "routed_cost", "best_model_cost", "savings",
                           "routed_expected_score", "best_model_expected_score"], ["day"]) == [
        ("2026-11-24", "b", 3, 6.0, 12.0, 0.5, 0.8, 0.8667), ("2026-11-25", "b", 2, 5.0, 8.0, 0.375, 0.8, 0.85)]


def test_cluster_mix_and_far_from_centroid_share(views):
    assert _rows(views["traffic_cluster_mix"], ["cluster", "decisions", "traffic_share", "training_prompts",
                                                "training_share", "share_difference"], ["cluster"]) == [
        (0, 3, 0.6, 3, 0.75, -0.15), (1, 2, 0.4, 1, 0.25, 0.15)]
    # training distances 1, 2, 3, 4: the 95th percentile is 3 + 0.85 * (4 - 3) = 3.85; only d2 (4.0) is farther
    drift = views["traffic_drift"].assign(day=lambda f: f.day.astype(str))
    assert _rows(drift, ["day", "decisions", "far_share", "far_threshold", "mean_distance",
                         "training_mean_distance"], ["day"]) == [
        ("2026-11-24", 3, 0.3333, 3.85, 1.6667, 2.5), ("2026-11-25", 2, 0.0, 3.85, 0.15, 2.5)]
