"""The evidence gate: a newcomer that would win a cluster on a few lucky answers is provisional there.

A hand-made champion over a and b on two clusters of 20 validation prompts each (and 10 training prompts each, the
onboarding set's view of the pool); every prompt is assigned already, so nothing is embedded.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from tests.helpers import ingest, onboard
from tests.pipeline.toy_store import publish_in_session
from uniroute import operations, store
from uniroute.cli import app
from uniroute.pipeline.pool import registry
from uniroute.pipeline.pool.evidence_gate import GateThresholds, answers_to_full, gate_model, wilson_width
from uniroute.pipeline.pool.onboard import onboard_models
from uniroute.routers.cluster.kmeans import Centroids, clustering_id_of
from uniroute.routers.router import Router
from uniroute.settings import Settings

VAL = {0: [f"v{i:02d}" for i in range(20)], 1: [f"v{i:02d}" for i in range(20, 40)]}
TRAIN = {0: [f"t{i:02d}" for i in range(10)], 1: [f"t{i:02d}" for i in range(10, 20)]}
CENTROIDS = Centroids(np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32))


def _answers(path: Path, model: str, scores: dict[str, float], cost: float) -> Path:
    pd.DataFrame({"prompt_id": list(scores), "prompt": [f"question {p}" for p in scores], "model": model,
                  "score": list(scores.values()), "cost": cost}).to_csv(path, index=False)
    return path


def _scores(prompts: list[str], wrong: int) -> dict[str, float]:
    """The prompts answered, the first `wrong` of them wrong."""
    return {p: 0.0 if i < wrong else 1.0 for i, p in enumerate(prompts)}


@pytest.fixture
def gate_db(db_path, tmp_path):
    """a (cost 1): error 0.3 / 0.2 on the clusters; b (cost 3): 0.2 / 0.1; champion K=2 over them."""
    for model, cost, wrong in (("a", 1.0, (6, 4)), ("b", 3.0, (4, 2))):
        ingest(db_path, _answers(tmp_path / f"{model}-val.csv", model,
                                 {**_scores(VAL[0], wrong[0]), **_scores(VAL[1], wrong[1])}, cost),
               split="val", progress=False)
        ingest(db_path, _answers(tmp_path / f"{model}-train.csv", model,
                                 {**_scores(TRAIN[0], wrong[0] // 2), **_scores(TRAIN[1], wrong[1] // 2)}, cost),
               split="train", progress=False)
    clustering_id = clustering_id_of(CENTROIDS)
    router = Router("emb-test", ("a", "b"), np.array([1.0, 3.0]), np.array([[0.3, 0.2], [0.2, 0.1]]), CENTROIDS,
                    np.full((2, 2), 20))
    prompts = VAL[0] + TRAIN[0] + VAL[1] + TRAIN[1]
    with store.session(db_path, "test-setup") as s:
        store.execute(s.con, "assign_splits")
        store.write_frame(s.con, "cluster_assignments", pd.DataFrame(
            {"clustering_id": clustering_id, "prompt_id": prompts, "cluster": [0] * 30 + [1] * 30}))
        registry.save_router_version(s.con, registry.NewVersion(
            router, "gate-parent", clustering_id, "kmeans", "fp", val_area=0.5, promoted=True,
            reason="test champion", centroids=CENTROIDS))
    return db_path


def _champion(db_path: Path):
    with store.opened(db_path, read_only=True) as con:
        return registry.load_champion(con)


def _sql(db_path: Path, sql: str) -> pd.DataFrame:
    with store.opened(db_path, read_only=True) as con:
        return con.execute(sql).df()


def _lucky(tmp_path: Path) -> Path:
    """c (cost 0.5): 3 right answers in cluster 0; 5 in cluster 1, 3 wrong (thin there too, but it loses)."""
    return _answers(tmp_path / "c.csv", "c", {**_scores(VAL[0][:3], 0), **_scores(VAL[1][:5], 3)}, 0.5)


def test_three_lucky_answers_make_it_provisional_and_it_takes_no_traffic_there(gate_db, tmp_path):
    ingest(gate_db, _lucky(tmp_path), split="val", progress=False)
    result = onboard(gate_db, ["c"])
    verdict = result.gate["c"]
    assert verdict["status"] == "provisional" and verdict["provisional_clusters"] == [0]
    router = _champion(gate_db).router
    # Ungated it would take cluster 0 (error 0.0, the cheapest); on its bound (Wilson's upper end 0.56) it does not.
    assert router.psi[2, 0] == 0.0 and router.routing_psi[2, 0] == pytest.approx(0.5615, abs=1e-3)
    for lam in (0.0, 0.05, 0.2):
        assert router.models[router.cluster_table(lam)[0]] != "c"
    # The next prompts: the onboarding set's continuation in cluster 0 alone, none it answered.
    assert len(verdict["next_prompts"]) == answers_to_full(0.0, 3, GateThresholds()) == 7
    assert set(verdict["next_prompts"]) <= set(VAL[0][3:])
    assert "c is provisional in clusters [0]" in result.line() and "answers 7 more" in result.line()
    evidence = _sql(gate_db, "select * from onboarding_evidence where model = 'c' order by cluster")
    assert evidence["status"].tolist() == ["provisional", "full"] and set(evidence["model_status"]) == {"provisional"}
    row = evidence.iloc[0]
    assert (row.answers, row.winner_with, row.wins, row.thin, row.wins_on_bound) == (3, "c", True, True, False)
    assert row.winner_without == "b" and list(row.next_prompts) == verdict["next_prompts"]
    publish_in_session(gate_db, tmp_path / "published")
    table = _sql(gate_db, "select cluster, budget, model, provisional from current_routing_table where grid = 'budget'")
    assert (table[table.cluster == 0]["provisional"].map(list) == pd.Series([["c"]] * 10).values).all()
    # At the default budget it does not take cluster 0; at budgets only it fits, it may, on its bound.
    default = table[(table.cluster == 0) & np.isclose(table.budget, verdict["budget"])]
    assert len(default) == 1 and default.model.iloc[0] != "c"
    assert (table[table.cluster == 1]["provisional"].map(list) == pd.Series([[]] * 10).values).all()


def test_answering_the_suggested_prompts_promotes_it_to_full(gate_db, tmp_path):
    ingest(gate_db, _lucky(tmp_path), split="val", progress=False)
    suggested = onboard(gate_db, ["c"]).gate["c"]["next_prompts"]
    # Its real results on them: one wrong, so error 0.1 on 10 answers (interval 0.02-0.40) beats a's 0.3.
    ingest(gate_db, _answers(tmp_path / "c2.csv", "c", _scores(suggested, 1), 0.5), split="val", progress=False)
    result = onboard(gate_db, ["c"])
    assert result.gate["c"] == {**result.gate["c"], "status": "full", "provisional_clusters": [], "next_prompts": []}
    router = _champion(gate_db).router
    assert router.psi_floor is None and router.routing_psi[2, 0] == pytest.approx(0.1)
    assert router.models[router.cluster_table(0.0)[0]] == "c"
    assert "c passes the evidence gate" in result.line()
    evidence = _sql(gate_db, "select status, wins_on_bound from onboarding_evidence where model = 'c' and cluster = 0")
    assert evidence.iloc[0].tolist() == ["full", True]


def test_a_well_measured_newcomer_is_not_provisional(gate_db, tmp_path):
    ingest(gate_db, _answers(tmp_path / "d.csv", "d", {**_scores(VAL[0], 2), **_scores(VAL[1], 10)}, 0.5),
           split="val", progress=False)
    result = onboard(gate_db, ["d"])
    assert result.gate["d"]["status"] == "full"
    router = _champion(gate_db).router
    assert router.models[router.cluster_table(0.0)[0]] == "d" and not router.provisional_cells().any()


def test_the_thresholds_are_settings(gate_db, tmp_path, monkeypatch):
    ingest(gate_db, _lucky(tmp_path), split="val", progress=False)
    monkeypatch.setenv("UNIROUTE_GATE_MIN_CLUSTER_ANSWERS", "3")
    monkeypatch.setenv("UNIROUTE_GATE_MAX_INTERVAL_WIDTH", "0.6")
    gate = operations.Context.of(Settings()).gate
    assert gate == GateThresholds(3, 0.6)
    with store.session(gate_db, "onboard") as s:
        result = onboard_models(s.con, ["c"], gate=gate)
    assert result.gate["c"]["status"] == "full"  # 3 answers, interval 0.56 wide: enough under these thresholds
    assert wilson_width(0.0, 3) == pytest.approx(0.5615, abs=1e-3)
    # Each threshold alone makes 3 answers thin: too few (interval narrow enough), or too wide (answers enough);
    # onboarding the same results again under other thresholds judges the model again.
    for thresholds, provisional in ((GateThresholds(10, 0.6), [0]), (gate, []), (GateThresholds(3, 0.5), [0])):
        with store.session(gate_db, "onboard") as s:
            result = onboard_models(s.con, ["c"], gate=thresholds)
        assert result.gate["c"]["provisional_clusters"] == provisional, thresholds
        assert np.flatnonzero(_champion(gate_db).router.provisional_cells()[2]).tolist() == provisional


def test_a_model_alone_in_the_pool_is_never_provisional():
    router = Router("emb-test", ("c",), np.array([0.5]), np.array([[0.0, 0.4]]), CENTROIDS, np.array([[3, 5]]))
    verdict = gate_model(router, "c", ("c",), GateThresholds())
    assert verdict.status == "full" and verdict.cells["winner_without"].tolist() == ["", ""]


def test_every_surface_gives_the_same_verdict(gate_db, tmp_path, monkeypatch):
    """The command line, the inbox (what the flows run) and the Python API onboard through one operation."""
    homes = {}
    for surface in ("cli", "inbox"):
        homes[surface] = tmp_path / surface
        homes[surface].mkdir()
        shutil.copyfile(gate_db, homes[surface] / "uniroute.duckdb")
    lucky = _lucky(tmp_path)
    ingest(gate_db, lucky, split="val", progress=False)
    api = onboard(gate_db, ["c"]).as_dict()["gate"]
    monkeypatch.setenv("UNIROUTE_HOME", str(homes["cli"]))
    monkeypatch.setenv("UNIROUTE_MLFLOW", "false")
    shown = CliRunner().invoke(app, ["onboard", "--results", str(lucky), "--json"], catch_exceptions=False)
    assert shown.exit_code == 0, shown.output
    (homes["inbox"] / "inbox").mkdir()
    pd.read_csv(lucky).assign(split="val").to_csv(homes["inbox"] / "inbox" / "c.csv", index=False)
    settings = Settings(home=homes["inbox"], mlflow=False, inbox_settle_seconds=0.0)
    run = operations.inbox(operations.Context.of(settings))
    assert api["c"]["status"] == "provisional"
    assert json.loads(shown.stdout)["gate"] == api == run.onboarding.as_dict()["gate"]


def test_a_refreshed_row_drops_its_gate_and_others_keep_theirs():
    """with_model measures a row anew (the gate judges it again); adding or retiring others keeps the bounds."""
    router = Router("emb-test", ("a", "c"), np.array([1.0, 0.5]), np.array([[0.3, 0.2], [0.0, 0.4]]), CENTROIDS,
                    np.array([[20, 20], [3, 5]])).with_floor("c", np.array([0.56, 0.0]))
    assert router.routing_psi[1].tolist() == [0.56, 0.4]
    assert router.with_model("c", np.array([0.1, 0.4]), 0.5, np.array([10, 5])).psi_floor is None
    grown = router.with_model("d", np.array([0.2, 0.2]), 2.0, np.array([20, 20]))
    assert grown.provisional_cells().tolist() == [[False, False], [True, False], [False, False]]
    assert grown.without_model("a").provisional_cells().tolist() == [[True, False], [False, False]]
