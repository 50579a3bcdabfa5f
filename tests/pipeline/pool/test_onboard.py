"""Onboarding on a hand-made champion: Psi rows by SQL on frozen clusters, child versions, retire."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.helpers import ingest, onboard, retire
from uniroute import store
from uniroute.pipeline.pool import registry
from uniroute.pipeline.pool.onboard import OnboardError
from uniroute.pipeline.pool.retire import RetireError
from uniroute.routers.cluster.kmeans import Centroids, clustering_id_of
from uniroute.routers.router import Router

# Six validation prompts: p0-p2 in cluster 0, p3-p5 in cluster 1.
PROMPTS = [f"p{i}" for i in range(6)]
CLUSTER = [0, 0, 0, 1, 1, 1]


def _write_long(path: Path, model: str, scores: list[float], cost: float) -> Path:
    pd.DataFrame({
        "prompt_id": PROMPTS, "prompt": [f"question number {i}" for i in range(6)], "model": model,
        "score": scores, "cost": cost,
    }).to_csv(path, index=False)
    return path


@pytest.fixture
def champion_db(db_path, tmp_path):
    """A store with models a, b on six validation prompts and a champion K=2 router over them."""
    ingest(db_path, _write_long(tmp_path / "a.csv", "a", [1, 1, 1, 0, 0, 0], 1.0), split="val", progress=False)
    ingest(db_path, _write_long(tmp_path / "b.csv", "b", [0, 0, 1, 1, 1, 1], 3.0), split="val", progress=False)
    centroids = Centroids(np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32))
    clustering_id = clustering_id_of(centroids)
    psi = np.array([[0.0, 1.0], [2 / 3, 0.0]])
    router = Router("emb-test", ("a", "b"), np.array([1.0, 3.0]), psi, centroids, np.full((2, 2), 3))
    with store.session(db_path, "test-setup") as s:
        store.execute(s.con, "assign_splits")
        store.write_frame(s.con, "cluster_assignments", pd.DataFrame(
            {"clustering_id": clustering_id, "prompt_id": PROMPTS, "cluster": CLUSTER}))
        registry.save_router_version(s.con, registry.NewVersion(
            router, "kmeans-parent", clustering_id, "kmeans", "fp", val_area=0.5, promoted=True,
            reason="test champion", centroids=centroids))
    return db_path


def champion(db_path):
    with store.opened(db_path, read_only=True) as con:
        return registry.load_champion(con)


def version(db_path, router_id):
    with store.opened(db_path, read_only=True) as con:
        return registry.load_router_version(con, router_id)


def test_onboarding_adds_a_psi_row_from_sql_on_the_frozen_clusters(champion_db, tmp_path):
    ingest(champion_db, _write_long(tmp_path / "c.csv", "c", [1, 0, 0, 1, 1, 0], 2.0), split="val",
                progress=False)
    result = onboard(champion_db, ["c"])  # no new prompt: nothing is embedded
    assert result.embedded_prompts == 0 and result.parent_id == "kmeans-parent"
    child = champion(champion_db)
    assert child.router_id == result.router_id and child.parent_id == "kmeans-parent"
    assert child.router.models == ("a", "b", "c")
    np.testing.assert_allclose(child.router.psi[2], [2 / 3, 1 / 3])  # c: one of three right, two of three
    assert child.router.psi_counts[2].tolist() == [3, 3]
    assert child.router.costs[2] == pytest.approx(2.0)
    np.testing.assert_array_equal(child.router.assigner.centers,
                                  version(champion_db, "kmeans-parent").router.assigner.centers)
    with store.opened(champion_db, read_only=True) as con:
        rows = con.execute("select count(*) from psi where router_id = ?", [result.router_id]).fetchone()[0]
    assert rows == 3 * 2


def test_onboarding_measures_the_newcomers_cost_per_cluster(champion_db, tmp_path):
    """The cost cap's per-cluster model costs (routers.cluster.cluster_costs): c's answers in cluster 1 cost three times
    those in cluster 0 (longer prompts), so its cells cost 0.5 and 1.5 times its mean; a and b cost alike."""
    ingest(champion_db, _write_long(tmp_path / "c.csv", "c", [1, 0, 0, 1, 1, 0], [1.0, 1.0, 1.0, 3.0, 3.0, 3.0]),
           split="val", progress=False)
    child = champion(champion_db).router
    assert child.cost_scale is not None and child.cost_scale.tolist() == [[1.0, 1.0], [1.0, 1.0]]
    child = version(champion_db, onboard(champion_db, ["c"]).router_id).router
    assert child.costs[2] == pytest.approx(2.0)
    np.testing.assert_allclose(child.cost_scale, [[1.0, 1.0], [1.0, 1.0], [0.5, 1.5]])


def test_onboarding_refreshes_a_model_whose_results_changed(champion_db, tmp_path):
    # b's results on new validation prompts would change its row; here we re-onboard b itself: same values.
    result = onboard(champion_db, ["b"])
    child = version(champion_db, result.router_id).router
    assert child.models == ("a", "b")
    np.testing.assert_allclose(child.psi[1], [2 / 3, 0.0])


def test_onboarding_unknown_or_costless_models_is_a_clear_error(champion_db, tmp_path):
    with pytest.raises(OnboardError, match="no results"):
        onboard(champion_db, ["nobody"])
    path = tmp_path / "d.csv"
    _write_long(path, "d", [1] * 6, 1.0)
    pd.read_csv(path).assign(cost=None).to_csv(path, index=False)
    ingest(champion_db, path, split="val", progress=False)
    with pytest.raises(OnboardError, match="set-cost"):
        onboard(champion_db, ["d"])


def test_retire_takes_a_model_out_of_the_pool(champion_db):
    retire(champion_db, "a")
    with store.opened(champion_db, read_only=True) as con:
        assert store.query(con, "active_models").model.tolist() == ["b"]
    with pytest.raises(RetireError, match="no model"):
        retire(champion_db, "zzz")
