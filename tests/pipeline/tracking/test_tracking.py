"""MLflow lineage against a real SQLite tracking store in tmp_path: runs, registry aliases, the router pyfunc."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests import needs
from tests.pipeline.topics import COSTS, MODELS, NEW_PROMPTS, PROMPTS, topic_losses
from uniroute import store as uniroute_store
from uniroute.pipeline.pool import registry
from uniroute.pipeline.tracking import (
    CHALLENGER,
    CHAMPION,
    REGISTERED_NAME,
    SyncReport,
    champion_version,
    compact_val,
    load_router_model,
    pool_of,
    prompts_of,
    sync_mlflow,
)
from uniroute.pipeline.tracking.relocate import ForeignTrackingStore
from uniroute.pipeline.traffic.shadow_gate import ShadowGate, record_gate
from uniroute.routers.cluster.kmeans import Centroids, clustering_id_of, fit_centroids
from uniroute.routers.cluster.psi import psi_from_losses
from uniroute.routers.router import Router
from uniroute.routers.rule import EmbedderMismatch
from uniroute.routers.tables import default_budget, validation_proxy

mlflow = needs.module("mlflow")


# ---- fixtures -------------------------------------------------------------------------------------------


@pytest.fixture
def tiny_router() -> Router:
    """Two clusters on a line, three models: 'cheap' wins cluster 0, 'big' wins cluster 1."""
    centroids = Centroids(np.array([[-1.0, 0.0], [1.0, 0.0]], dtype=np.float32))
    psi = np.array([[0.1, 0.9], [0.5, 0.1], [0.6, 0.6]])  # rows: cheap, big, mid
    return Router("toy-embedder", ("cheap", "big", "mid"), np.array([1.0, 10.0, 5.0]), psi, centroids)


def _save(db_path: Path, router: Router, router_id: str, promoted: bool = True, origin: str = "build",
          parent_id: str | None = None, val_area: float | None = 0.7, metrics: bool = True) -> None:
    """A router version in the store, as a build (with held-out metrics and curves) or onboarding writes it."""
    metric_rows = pd.DataFrame({"method": ["kmeans", "kmeans"], "metric": ["area", "peak"], "value": [0.71, 0.9]})
    curves = pd.DataFrame({"method": "kmeans", "point": [0, 1], "cost": [0.2, 0.9], "score": [0.5, 0.8]})
    with uniroute_store.session(db_path, "test") as s:
        registry.save_router_version(s.con, registry.NewVersion(
            router, router_id, clustering_id_of(router.assigner), "kmeans", "fp-1",
            val_area, promoted, f"test {origin}", centroids=router.assigner, parent_id=parent_id, origin=origin,
            metrics=metric_rows if metrics else None, curves=curves if metrics else None,
        ))


def _sync(db_path: Path, tracking: tuple[str, Path]) -> SyncReport:
    with uniroute_store.session(db_path, "reconcile") as s:
        return sync_mlflow(s.con, *tracking)


def _client(uri: str):
    return mlflow.MlflowClient(tracking_uri=uri, registry_uri=uri)


def _artifact_paths(client, run_id: str) -> set[str]:
    """Every file path logged to the run (recursively), outside the logged model's own folder."""
    out, todo = set(), [None]
    while todo:
        for info in client.list_artifacts(run_id, todo.pop()):
            (todo.append(info.path) if info.is_dir else out.add(info.path))
    return out


def _mlflow_rows(db_path: Path) -> list[tuple]:
    with uniroute_store.opened(db_path, read_only=True) as con:
        return con.execute("select router_id, model_version from router_mlflow order by router_id").fetchall()


# ---- MLflow follows the store ---------------------------------------------------------------------------


def test_sync_logs_a_build_and_points_champion_at_it(db_path, tracking, tiny_router):
    _save(db_path, tiny_router, "r-001")
    report = _sync(db_path, tracking)
    assert report.registered == ["r-001"] and report.aliases == {CHAMPION: "1"}
    client = _client(tracking[0])
    version = client.get_model_version_by_alias(REGISTERED_NAME, CHAMPION)
    assert str(version.version) == "1" and version.tags["router_id"] == "r-001"
    assert version.tags["embedder_id"] == "toy-embedder" and float(version.tags["val_area"]) == 0.7
    run = client.get_run(version.run_id)
    assert run.data.tags["kind"] == "build" and run.data.tags["router_id"] == "r-001"
    assert run.data.params["pool"] == "cheap,big,mid" and run.data.params["k"] == "2"
    assert run.data.metrics == pytest.approx({"kmeans_area": 0.71, "kmeans_peak": 0.9, "val_area": 0.7})
    assert {"psi.csv", "deferral_curves.csv", "deferral_curves.png", "routing_table.csv",
            "centroids.npy"} <= _artifact_paths(client, version.run_id)
    experiment = client.get_experiment(run.info.experiment_id)
    assert experiment.name == "uniroute" and experiment.artifact_location == tracking[1].resolve().as_uri()
    assert champion_version(tracking[0])["router_id"] == "r-001"
    assert _mlflow_rows(db_path) == [("r-001", "1")]


def test_the_shadow_gate_lands_in_the_build_run(db_path, tracking, tiny_router):
    _save(db_path, tiny_router, "r-001")
    _save(db_path, tiny_router, "r-002", promoted=False)
    gate = ShadowGate("refuse", "shadow gate refused: ...", 7.0, "r-001", 300, 0.5, 0.8, 0.7, -0.1, 0.02, 1e-6)
    with uniroute_store.session(db_path, "test") as s:
        record_gate(s.con, "r-002", gate)
    _sync(db_path, tracking)
    client = _client(tracking[0])
    run = next(r for r in client.search_runs([client.get_experiment_by_name("uniroute").experiment_id])
               if r.data.tags.get("router_id") == "r-002")
    assert run.data.params["shadow_verdict"] == "refuse" and run.data.params["shadow_champion_id"] == "r-001"
    assert run.data.params["shadow_test"].startswith("one-sided paired z-test")
    assert run.data.metrics["shadow_difference"] == pytest.approx(-0.1)
    assert run.data.metrics["shadow_p_worse"] == pytest.approx(1e-6) and run.data.metrics["shadow_n_decisions"] == 300


def test_sync_is_idempotent_and_adopts_what_a_killed_run_registered(db_path, tracking, tiny_router):
    _save(db_path, tiny_router, "r-001")
    _sync(db_path, tracking)
    again = _sync(db_path, tracking)
    assert again.registered == [] and again.aliases == {}
    # A run killed after MLflow registered the router but before the store recorded it: found by its tag.
    with uniroute_store.session(db_path, "test") as s:
        s.con.execute("delete from router_mlflow")
    adopted = _sync(db_path, tracking)
    assert adopted.adopted == ["r-001"] and adopted.registered == []
    assert len(_client(tracking[0]).search_model_versions(f"name = '{REGISTERED_NAME}'")) == 1
    assert _mlflow_rows(db_path) == [("r-001", "1")]


def test_a_lost_tracking_store_is_rebuilt_from_the_store(db_path, tracking, tiny_router, migrated_db, tmp_path):
    import shutil

    from tests.helpers import publish

    _save(db_path, tiny_router, "r-001")
    with uniroute_store.session(db_path, "test") as s:
        uniroute_store.write_frame(s.con, "models", pd.DataFrame(
            {"model": list(tiny_router.models), "default_cost": 1.0, "status": "active",
             "first_seen": pd.Timestamp("2026-01-01")}))
    version = publish(db_path, tmp_path / "published").version
    _sync(db_path, tracking)
    # mlflow.db deleted or replaced by an empty one (same artifact root): the store still says all was logged
    fresh = tmp_path / "fresh" / "mlflow.db"
    fresh.parent.mkdir()
    shutil.copyfile(migrated_db, fresh)
    lost = (f"sqlite:///{fresh}", tracking[1])
    report = _sync(db_path, lost)
    assert report.registered == ["r-001"] and report.publications == [version]
    assert report.aliases == {CHAMPION: "1"} and champion_version(lost[0])["router_id"] == "r-001"
    assert _sync(db_path, lost).lines() == []  # and it is settled


def test_the_store_decides_champion_and_challenger(db_path, tracking, tiny_router):
    _save(db_path, tiny_router, "r-001", promoted=True)
    _save(db_path, tiny_router, "r-002", promoted=False, val_area=0.6)  # a build the store did not promote
    _sync(db_path, tracking)
    client = _client(tracking[0])
    assert client.get_model_version_by_alias(REGISTERED_NAME, CHAMPION).tags["router_id"] == "r-001"
    assert client.get_model_version_by_alias(REGISTERED_NAME, CHALLENGER).tags["router_id"] == "r-002"
    # An onboarded child of the champion becomes champion; the stale challenger is older than it: cleared.
    child = tiny_router.with_model("newbie", np.array([0.05, 0.95]), cost=0.5)
    _save(db_path, child, "r-003", origin="onboard", parent_id="r-001", metrics=False)
    report = _sync(db_path, tracking)
    assert report.aliases == {CHAMPION: "3", CHALLENGER: "(removed)"}
    version = client.get_model_version_by_alias(REGISTERED_NAME, CHAMPION)
    assert version.tags["router_id"] == "r-003" and version.tags["parent_router_id"] == "r-001"
    assert client.get_run(version.run_id).data.tags["kind"] == "onboard"
    assert CHALLENGER not in client.get_registered_model(REGISTERED_NAME).aliases


def test_publications_are_logged_as_runs(db_path, tracking, tiny_router, tmp_path):
    from tests.helpers import publish

    _save(db_path, tiny_router, "r-001")
    with uniroute_store.session(db_path, "test") as s:
        store_models = pd.DataFrame({"model": list(tiny_router.models), "default_cost": 1.0, "status": "active",
                                     "first_seen": pd.Timestamp("2026-01-01")})
        uniroute_store.write_frame(s.con, "models", store_models)
    result = publish(db_path, tmp_path / "published")
    report = _sync(db_path, tracking)
    assert report.publications == [result.version]
    client = _client(tracking[0])
    runs = client.search_runs([client.get_experiment_by_name("uniroute").experiment_id],
                              filter_string="tags.kind = 'publish'")
    assert len(runs) == 1 and runs[0].data.params["version"] == result.version
    assert "routes.parquet" in _artifact_paths(_client(tracking[0]), runs[0].info.run_id)


def test_store_of_another_home_is_refused(db_path, tracking, tiny_router, tmp_path):
    _save(db_path, tiny_router, "r-001")
    _sync(db_path, tracking)
    _save(db_path, tiny_router, "r-002")
    with pytest.raises(ForeignTrackingStore, match="artifacts at .* belongs to another UNIROUTE_HOME; move it "
                       r"aside \(mv .*mlflow.db .*mlflow.db.foreign\)"), uniroute_store.session(db_path, "x") as s:
        sync_mlflow(s.con, tracking[0], tmp_path / "elsewhere")


def test_global_tracking_uri_is_left_as_it_was(db_path, tracking, tiny_router, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    mlflow.set_tracking_uri(None)
    _save(db_path, tiny_router, "r-001")
    _sync(db_path, tracking)
    assert not mlflow.is_tracking_uri_set()
    assert "MLFLOW_TRACKING_URI" not in os.environ


# ---- the pyfunc's routing, without MLflow ---------------------------------------------------------------


def test_route_terms_lambda_pool_and_budget(tiny_router):
    """The pyfunc routes by the argmin's terms (routers.explain.RouteTerms): rank 1 of each prompt's terms."""
    X = np.array([[-0.9, 0.1], [0.8, 0.0], [1.2, -0.1]], dtype=np.float32)  # clusters 0, 1, 1

    def chosen(lam: float = 0.0, pool: list[str] | None = None) -> list[str]:
        return tiny_router.route_terms(X, lam, pool).summary()["model"].tolist()

    assert chosen() == ["cheap", "big", "big"]
    # lambda 0.2: cluster 1 costs big 0.1 + 2.0, cheap 0.9 + 0.2, mid 0.6 + 1.0 -> cheap
    assert chosen(0.2) == ["cheap", "cheap", "cheap"]
    assert chosen(pool=["cheap", "mid"]) == ["cheap", "mid", "mid"]
    # Budget 0.1 of the priciest (10) = mean cost 1: only 'cheap' everywhere fits.
    assert chosen(tiny_router.lambda_for_budget(X, 0.1)) == ["cheap", "cheap", "cheap"]
    assert chosen(tiny_router.lambda_for_budget(X, 1.0)) == ["cheap", "big", "big"]
    # Without validation embeddings the router's own stand-in turns the budget into lambda.
    lam = tiny_router.lambda_for_budget(None, 0.5)
    assert chosen(lam) == tiny_router.route_names(X, lam).tolist()
    with pytest.raises(ValueError, match="unknown models"):
        tiny_router.route_terms(X[:0], 0.0, ["gpt-nope"])
    empty = tiny_router.route_terms(X[:0]).summary()
    assert list(empty.columns) == ["model", "fallbacks", "expected_score", "expected_cost"] and len(empty) == 0


def test_input_and_param_parsing():
    assert prompts_of(pd.DataFrame({"prompt": ["a", "b"]})) == ["a", "b"]
    assert prompts_of({"prompt": ["a"]}) == ["a"]
    assert prompts_of(["x", "y"]) == ["x", "y"]
    with pytest.raises(ValueError, match="'prompt' column"):
        prompts_of(pd.DataFrame({"text": ["a"]}))
    with pytest.raises(TypeError, match="rows \\[1\\]"):
        prompts_of(["a", 3])
    with pytest.raises(TypeError):
        prompts_of("just one string")
    assert pool_of("") is None and pool_of("  ") is None
    assert pool_of("a, b,,c") == ["a", "b", "c"]


def test_compact_val_is_exact_for_repeated_rows_and_a_seeded_sample_otherwise():
    centres = np.array([[0.0, 1.0], [1.0, 0.0], [0.5, 0.5]], dtype=np.float32)
    proxy = np.repeat(centres, [3000, 1, 40], axis=0)  # 3,041 rows, 3 distinct
    rows, counts = compact_val(proxy, max_rows=10)
    assert rows.shape == (3, 2) and counts.sum() == 3041
    restored = np.repeat(rows, counts, axis=0)
    assert sorted(map(tuple, restored.tolist())) == sorted(map(tuple, proxy.tolist()))

    X = np.arange(50, dtype=np.float32).reshape(25, 2)
    rows, counts = compact_val(X, max_rows=10)
    assert rows.shape == (10, 2) and np.all(counts == 1)
    assert all(any(np.array_equal(r, x) for x in X) for r in rows)
    assert np.array_equal(rows, compact_val(X, max_rows=10)[0])
    with pytest.raises(ValueError, match="non-empty"):
        compact_val(np.zeros((0, 2)))


# ---- the registered pyfunc with a real embedder -----------------------------------------------------------

@pytest.fixture(scope="module")
def embedder():
    embed = needs.module("uniroute.embed")
    return embed.make_embedder("minilm", progress=False)


@pytest.fixture(scope="module")
def fitted(embedder):
    """A small real Router (K=3 K-means on MiniLM embeddings, Psi from per-topic losses) and its val embeddings."""
    X = np.asarray(embedder.encode(PROMPTS), dtype=np.float32)
    centroids = fit_centroids(X, k=3, seed=0)
    psi = psi_from_losses(centroids.assign(X), topic_losses(), 3, MODELS)
    router = Router(embedder.embedder_id, MODELS, COSTS, psi.values, centroids, psi.counts)
    return router, X


@pytest.fixture
def champion_model(db_path, tracking, fitted):
    router, _ = fitted
    _save(db_path, router, "r-real")
    _sync(db_path, tracking)
    return load_router_model(f"models:/{REGISTERED_NAME}@{CHAMPION}", tracking_uri=tracking[0])


def test_pyfunc_routes_like_the_router(champion_model, fitted, embedder):
    router, X_val = fitted
    X = np.asarray(embedder.encode(NEW_PROMPTS), dtype=np.float32)
    request = pd.DataFrame({"prompt": NEW_PROMPTS})

    default = champion_model.predict(request)
    assert default["prompt_index"].tolist() == list(range(len(NEW_PROMPTS)))
    # No lambda, no budget: the default budget at its published lambda, as `uniroute route` (the same fields too).
    budget, lam_default, _, _ = default_budget(router, router.models)
    assert default["model"].tolist() == router.route_names(X, lam_default).tolist()
    assert set(default["setting"]) == {"default budget"} and set(default["budget"]) == {budget}
    assert default["router_id"].tolist() == ["r-real"] * len(NEW_PROMPTS)
    assert default["cluster"].tolist() == router.assigner.assign(X).tolist()
    quality = champion_model.predict(request, params={"lambda": 0.0})
    assert quality["model"].tolist() == router.route_names(X).tolist()
    # Not a constant router: the specialists win their own clusters at lambda 0.
    assert len(set(quality["model"])) > 1
    for lam in (0.01, 0.1, 1.0):
        got = champion_model.predict(request, params={"lambda": lam})
        assert got["model"].tolist() == router.route_names(X, lam).tolist()
    got = champion_model.predict(request, params={"pool": "chef,generalist"})
    assert got["model"].tolist() == router.route_names(X, 0.0, ["chef", "generalist"]).tolist()
    # Budget 0.6 of the priciest pool model (coder, 3.0): a mean cost of 1.8 forces a mix of models. The model
    # carries the validation stand-in `uniroute route --budget` uses (centroids weighted by their evidence).
    pool = ["mathwiz", "chef", "coder"]
    lam = router.lambda_for_budget(validation_proxy(router), 0.6, pool)
    assert lam > 0
    got = champion_model.predict(request, params={"budget": 0.6, "pool": ",".join(pool)})
    assert got["model"].tolist() == router.route_names(X, lam, pool).tolist()
    with pytest.raises(Exception, match=r"models \['nobody'\] are not in the pool of router r-real"):
        champion_model.predict(request, params={"pool": "chef,nobody"})


def test_a_tfidf_router_is_served_with_its_fitted_embedder(db_path, tracking):
    from uniroute.embed import fit_tfidf

    embedder = fit_tfidf(PROMPTS, dim=8, seed=0, progress=False)
    X = embedder.encode(PROMPTS)
    centroids = fit_centroids(X, k=3, seed=0)
    psi = psi_from_losses(centroids.assign(X), topic_losses(), 3, MODELS)
    router = Router(embedder.embedder_id, MODELS, COSTS, psi.values, centroids, psi.counts)
    with uniroute_store.session(db_path, "test") as s:
        registry.save_router_version(s.con, registry.NewVersion(
            router, "r-tfidf", clustering_id_of(centroids), "kmeans", "fp", 0.7, True, "test",
            centroids=centroids, embedder=embedder))
    _sync(db_path, tracking)
    model = load_router_model(f"models:/{REGISTERED_NAME}@{CHAMPION}", tracking_uri=tracking[0])
    got = model.predict(pd.DataFrame({"prompt": NEW_PROMPTS}))
    assert got["model"].tolist() == router.route_names(embedder.encode(NEW_PROMPTS)).tolist()


def test_pyfunc_refuses_a_router_fitted_on_another_embedder(db_path, tracking, fitted):
    router, _ = fitted
    foreign = Router("minilm:some-other-version", router.models, router.costs, router.psi, router.assigner)
    _save(db_path, foreign, "r-foreign")
    _sync(db_path, tracking)
    with pytest.raises(EmbedderMismatch, match="some-other-version"):
        load_router_model(f"models:/{REGISTERED_NAME}@{CHAMPION}", tracking_uri=tracking[0])
