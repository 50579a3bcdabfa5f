"""`uniroute onboard --results FILE` where it used to be tested only on the easy case: a model the champion
already routes whose results changed (its Psi row, cost and router version change), and a results file that
also holds training and test rows (Psi and cost come from the validation rows only)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from uniroute import store
from uniroute.cli import app
from uniroute.pipeline.pool import registry
from uniroute.routers.cluster.kmeans import Centroids, clustering_id_of
from uniroute.routers.router import Router

runner = CliRunner()
# Six validation prompts: p0-p2 in cluster 0, p3-p5 in cluster 1; two models a (cost 1) and b (cost 3).
VAL = [f"p{i}" for i in range(6)]
CLUSTER = [0, 0, 0, 1, 1, 1]


def _rows(model: str, prompt_ids: list[str], scores: list[float], cost: float,
          split: str | None = None) -> pd.DataFrame:
    frame = pd.DataFrame({"prompt_id": prompt_ids, "prompt": [f"question {p}" for p in prompt_ids], "model": model,
                          "score": scores, "cost": cost})
    return frame if split is None else frame.assign(split=split)


def _assign(db_path: Path, clustering_id: str, prompt_ids: list[str], clusters: list[int]) -> None:
    """Cluster assignments as a build leaves them (so onboarding embeds nothing: the champion's embedder is fake)."""
    with store.session(db_path, "test-setup") as s:
        store.write_frame(s.con, "cluster_assignments", pd.DataFrame(
            {"clustering_id": clustering_id, "prompt_id": prompt_ids, "cluster": clusters}))


@pytest.fixture
def champion_home(home, tmp_path, monkeypatch):
    """(home, clustering id): models a, b on six validation prompts and a hand-made K=2 champion over them."""
    monkeypatch.setenv("UNIROUTE_HOME", str(home))
    monkeypatch.setenv("UNIROUTE_MLFLOW", "false")
    db_path = home / "uniroute.duckdb"
    a = _rows("a", VAL, [1, 1, 1, 0, 0, 0], 1.0)
    b = _rows("b", VAL, [0, 0, 1, 1, 1, 1], 3.0)
    pd.concat([a, b]).to_csv(tmp_path / "ab.csv", index=False)
    assert runner.invoke(app, ["ingest", str(tmp_path / "ab.csv"), "--split", "val"]).exit_code == 0
    centroids = Centroids(np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32))
    clustering_id = clustering_id_of(centroids)
    psi = np.array([[0.0, 1.0], [2 / 3, 0.0]])
    router = Router("emb-test", ("a", "b"), np.array([1.0, 3.0]), psi, centroids, np.full((2, 2), 3))
    with store.session(db_path, "test-setup") as s:
        store.execute(s.con, "assign_splits")
        store.write_frame(s.con, "cluster_assignments", pd.DataFrame(
            {"clustering_id": clustering_id, "prompt_id": VAL, "cluster": CLUSTER}))
        registry.save_router_version(s.con, registry.NewVersion(
            router, "kmeans-parent", clustering_id, "kmeans", "fp", val_area=0.5, promoted=True,
            reason="test champion", centroids=centroids))
    return home, clustering_id


def _onboard(path: Path) -> dict:
    result = runner.invoke(app, ["onboard", "--results", str(path), "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout.strip().splitlines()[-1])


def _champion(home: Path) -> registry.RouterVersion:
    with store.opened(home / "uniroute.duckdb", read_only=True) as con:
        return registry.load_champion(con)


def _psi_rows(home: Path, router_id: str, model: str) -> list[tuple[int, float, int]]:
    with store.opened(home / "uniroute.duckdb", read_only=True) as con:
        return con.execute("select cluster, loss, n from psi where router_id = ? and model = ? order by cluster",
                           [router_id, model]).fetchall()


def test_a_routed_model_whose_results_changed_gets_a_new_psi_row_cost_and_router_version(champion_home, tmp_path):
    home, clustering_id = champion_home
    # Same results again: nothing changes, no version is written.
    _rows("b", VAL, [0, 0, 1, 1, 1, 1], 3.0).to_csv(tmp_path / "b_same.csv", index=False)
    same = _onboard(tmp_path / "b_same.csv")
    assert same["models"] == [] and same["unchanged"] == ["b"] and same["router_id"] == "kmeans-parent"
    # b answers three more validation prompts of cluster 0, all right, at cost 6: its row and cost change.
    new = ["p6", "p7", "p8"]
    _assign(home / "uniroute.duckdb", clustering_id, new, [0, 0, 0])
    _rows("b", new, [1, 1, 1], 6.0).to_csv(tmp_path / "b_more.csv", index=False)
    refreshed = _onboard(tmp_path / "b_more.csv")
    assert refreshed["models"] == ["b"] and refreshed["unchanged"] == []
    assert refreshed["router_id"] != "kmeans-parent" and refreshed["parent_id"] == "kmeans-parent"
    child = _champion(home)
    assert child.router_id == refreshed["router_id"]
    assert child.router.models == ("a", "b")  # refreshed in place, not added twice
    # Cluster 0: losses 1, 1, 0 then 0, 0, 0 -> 1/3 over six prompts; cluster 1 unchanged.
    np.testing.assert_allclose(child.router.psi[1], [1 / 3, 0.0])
    assert child.router.psi_counts[1].tolist() == [6, 3]
    assert child.router.costs[1] == pytest.approx((3 * 6 + 6 * 3) / 9)  # mean over its nine validation rows
    np.testing.assert_allclose(child.router.psi[0], [0.0, 1.0])  # a untouched
    got = _psi_rows(home, child.router_id, "b")
    assert [(c, n) for c, _, n in got] == [(0, 6), (1, 3)]
    np.testing.assert_allclose([loss for _, loss, _ in got], [1 / 3, 0.0])
    # And again: now unchanged, the champion stays.
    again = _onboard(tmp_path / "b_more.csv")
    assert again["models"] == [] and again["router_id"] == child.router_id


def _newcomer_file(home: Path, clustering_id: str, path: Path) -> Path:
    """Newcomer c's results on validation, training and test prompts, interleaved as a real export would be."""
    train, test = [f"t{i}" for i in range(6)], [f"s{i}" for i in range(6)]
    # Training and test prompts are clustered like any other (a build assigns its training prompts).
    _assign(home / "uniroute.duckdb", clustering_id, train + test, CLUSTER + CLUSTER)
    pd.concat([
        _rows("c", VAL, [1, 0, 0, 1, 1, 0], 2.0, split="val"),
        _rows("c", train, [1, 1, 1, 1, 1, 1], 100.0, split="train"),  # would pull Psi to 0 and the cost up
        _rows("c", test, [0, 0, 0, 0, 0, 0], 50.0, split="test"),  # would pull Psi to 1
    ]).sample(frac=1.0, random_state=0).to_csv(path, index=False)
    return path


def _assert_c_from_validation_rows(home: Path) -> None:
    child = _champion(home)
    assert child.router.models == ("a", "b", "c")
    np.testing.assert_allclose(child.router.psi[2], [2 / 3, 1 / 3])  # one of three right, two of three
    assert child.router.psi_counts[2].tolist() == [3, 3]
    assert child.router.costs[2] == pytest.approx(2.0)
    assert [(cl, n) for cl, _, n in _psi_rows(home, child.router_id, "c")] == [(0, 3), (1, 3)]


def test_a_newcomer_landing_with_training_and_test_rows_is_onboarded_from_its_validation_rows(champion_home,
                                                                                              tmp_path):
    """Through the inbox, which keeps the file's own splits: the training and test rows land in the store."""
    home, clustering_id = champion_home
    inbox = home / "inbox"
    inbox.mkdir()
    path = _newcomer_file(home, clustering_id, inbox / "c.csv")
    os.utime(path, (path.stat().st_atime - 60, path.stat().st_mtime - 60))  # settled: written a minute ago
    result = runner.invoke(app, ["inbox"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    with store.opened(home / "uniroute.duckdb", read_only=True) as con:
        splits = dict(con.execute("select s.split, count(*) from results r join prompt_splits s using (prompt_id) "
                                  "where r.model = 'c' group by 1").fetchall())
    assert splits == {"val": 6, "train": 6, "test": 6}  # every row landed, under its own split
    _assert_c_from_validation_rows(home)


def test_onboard_results_with_training_and_test_rows_quarantines_them_and_uses_the_validation_rows(champion_home,
                                                                                                   tmp_path):
    home, clustering_id = champion_home
    onboarded = _onboard(_newcomer_file(home, clustering_id, tmp_path / "c.csv"))
    assert onboarded["models"] == ["c"]
    _assert_c_from_validation_rows(home)
    with store.opened(home / "uniroute.duckdb", read_only=True) as con:
        landed = con.execute("select count(*) from results where model = 'c'").fetchone()[0]
    assert landed == 6  # the 12 training and test rows were read as validation results, so refused
