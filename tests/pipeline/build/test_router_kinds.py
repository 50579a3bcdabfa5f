"""Every router kind, forced as the build's champion (kinds=), survives the pipeline: publish, route from the
store and from the published snapshot, onboard a new model, retire one, and serve as the MLflow pyfunc.

A real pool: synthetic logs (5 LLMs, 400 prompts with splits), TF-IDF embeddings, a DuckDB file per kind; the
newcomer is held back and arrives with its validation results, as a new model would."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import mlflow
import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from tests.helpers import build, embedded, ingest, onboard, publish, retire
from uniroute import store
from uniroute.cli import app
from uniroute.pipeline.pool import registry
from uniroute.pipeline.serving import route as serving
from uniroute.pipeline.serving import snapshot
from uniroute.pipeline.tracking import CHAMPION, REGISTERED_NAME, load_router_model, sync_mlflow
from uniroute.routers.kinds import router_kind
from uniroute.routers.knn.neighbours import KnnRouter
from uniroute.selection.candidates import KINDS
from uniroute.selection.selection import model_row
from uniroute.settings import Settings
from uniroute.synth import write_synthetic_logs

NEWCOMER = "synth-llm-04"
PROMPTS = ["solve the equation for x", "write a short poem about rain", "which enzyme breaks down starch",
           "translate good morning into french", "sort a list in python"]


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> pd.DataFrame:
    summary = write_synthetic_logs(tmp_path_factory.mktemp("logs"), n_prompts=400, n_models=5, n_topics=4, seed=3,
                                   with_split=True)
    return pd.read_parquet(summary.logs_path)


def _kind_logs(logs: pd.DataFrame, kind: str) -> pd.DataFrame:
    """The logs a kind is built from: a quality-only kind (the quality-only rule) needs every model at one cost."""
    return logs.assign(cost=0.001) if router_kind(kind).quality_only else logs


def _budget(kind: str) -> float:
    """A budget the pool can meet: with every model at one cost nothing costs less than the whole price."""
    return 1.0 if router_kind(kind).quality_only else 0.5


@pytest.fixture(scope="module", params=KINDS)
def pool(request, tmp_path_factory, logs) -> Settings:
    """A home whose champion is of one kind (the build fitted that kind alone), published once."""
    root = tmp_path_factory.mktemp(request.param)
    settings = Settings(home=root / "home")
    settings.home.mkdir()
    logs = _kind_logs(logs, request.param)
    logs[logs.model != NEWCOMER].to_parquet(root / "known.parquet", index=False)
    ingest(settings.db_path, root / "known.parquet", progress=False)
    result = build(settings.db_path, "tfidf", kinds=(request.param,))
    assert result.kind == request.param and [c["kind"] for c in result.candidates] == [request.param]
    publish(settings.db_path, settings.published_dir)
    return settings


def _champion(db_path: Path) -> registry.RouterVersion:
    with store.opened(db_path, read_only=True) as con:
        return registry.load_champion(con)


def _routed(source: serving.RoutingSource, **request) -> list[str]:
    return serving.route_texts(source, PROMPTS, **request)["model"].tolist()


@pytest.mark.slow
def test_the_pyfunc_routes_every_kind_like_uniroute_route(pool, tmp_path, monkeypatch, migrated_db):
    monkeypatch.setenv("UNIROUTE_HOME", str(tmp_path / "served"))  # where the served model records decisions
    shutil.copyfile(migrated_db, tmp_path / "mlflow.db")  # MLflow migrates its schema once per session, not per kind
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    with store.session(pool.db_path, "reconcile") as s:
        sync_mlflow(s.con, uri, tmp_path / "artifacts")
    model = load_router_model(f"models:/{REGISTERED_NAME}@{CHAMPION}", tracking_uri=uri)
    source = serving.routing_source(pool.db_path, pool.published_dir)
    request = pd.DataFrame({"prompt": PROMPTS})
    for params in ({"lambda": 0.0}, {"lambda": 5.0}, {"budget": _budget(source.router.kind)}):
        served = model.predict(request, params=params)["model"].tolist()
        assert served == _routed(source, lam=params.get("lambda"), budget=params.get("budget")), params
    # Every kind's decisions are recorded: K-NN names its nearest references instead of a cluster.
    model.unwrap_python_model().spool.close()
    records = [json.loads(line) for path in (tmp_path / "served" / "spool" / "decisions").glob("*.jsonl")
               for line in path.read_text().splitlines()]
    assert len(records) == 3 * len(PROMPTS) and {r["source"] for r in records} == {"pyfunc"}
    knn = source.router.kind == "knn"
    assert all((r["neighbours"] is not None) == knn and (r["cluster"] is None) == knn for r in records)
    client = mlflow.MlflowClient(tracking_uri=uri, registry_uri=uri)
    version = client.get_model_version_by_alias(REGISTERED_NAME, CHAMPION)
    run = client.get_run(version.run_id)
    assert run.data.params["router_kind"] == source.router.kind
    # The champion may be an onboarding or retirement child by now (the module's pool is shared and the order is
    # random); the candidates are a property of the build that made the kind, so read the build's own run.
    (built,) = client.search_runs([run.info.experiment_id], filter_string="tags.kind = 'build'")
    assert built.data.params["candidate_kinds"] == source.router.kind
    assert "candidates.csv" in {a.path for a in client.list_artifacts(built.info.run_id)}


def test_every_kind_publishes_routes_onboards_and_retires(pool, logs, tmp_path):
    champion = _champion(pool.db_path)
    kind = champion.kind
    logs = _kind_logs(logs, kind)
    assert champion.router.kind == kind
    snap = snapshot.read_current(pool.published_dir)
    assert snap.manifest["kind"] == kind and snap.router().kind == kind
    assert set(snapshot.TABLE_FILES) <= set(snap.files) and len(snap.budgets) == 20
    assert (len(snap.routes) > 0) == champion.router.one_hot  # per-prompt kinds route with router.npz

    # Route: the store's champion and the published snapshot agree, at a lambda and at a budget.
    source = serving.routing_source(pool.db_path, pool.published_dir)
    published = serving._from_snapshot(pool.published_dir, "the store is busy (test)")
    for request in ({"lam": 0.0}, {"lam": 5.0}, {"budget": _budget(kind)}):
        assert _routed(source, **request) == _routed(published, **request), request
    clusters = serving.route_texts(source, PROMPTS)["cluster"]
    assert clusters.isna().all() if kind == "knn" else clusters.notna().all()

    # Onboard: the newcomer's validation results become its row, exactly selection.model_row's row.
    with store.opened(pool.db_path, read_only=True) as con:
        val = set(con.execute("select prompt_id from prompt_splits where split = 'val'").df().prompt_id)
    landed = logs[(logs.model == NEWCOMER) & logs.prompt_id.isin(val)].sort_values("prompt_id")
    landed.to_parquet(tmp_path / "newcomer.parquet", index=False)
    ingest(pool.db_path, tmp_path / "newcomer.parquet", progress=False)
    result = onboard(pool.db_path, [NEWCOMER])
    child = _champion(pool.db_path)
    assert child.router_id == result.router_id and child.parent_id == champion.router_id and child.kind == kind
    assert child.router.models == (*champion.router.models, NEWCOMER)
    X = embedded(pool.db_path, landed.prompt.tolist(), champion.embedder())
    row, counts = model_row(champion.router, landed.prompt_id.tolist(), X, 1.0 - landed.score.to_numpy())
    if isinstance(child.router, KnnRouter):
        np.testing.assert_array_equal(child.router.labels[-1], row)
        assert result.embedded_prompts == 0  # K-NN joins labels by prompt id: nothing to embed
    else:
        np.testing.assert_allclose(child.router.psi[-1], row)
        np.testing.assert_array_equal(child.router.psi_counts[-1], counts)
    publish(pool.db_path, pool.published_dir)
    source = serving.routing_source(pool.db_path, pool.published_dir)
    assert NEWCOMER in source.pool
    assert set(_routed(source, pool=[NEWCOMER, source.pool[0]])) <= {NEWCOMER, source.pool[0]}

    # Retire: a child without the model serves and publishes; routing to it is refused.
    gone = champion.router.models[0]
    retired = retire(pool.db_path, gone)
    assert retired.parent_id == child.router_id and _champion(pool.db_path).kind == kind
    publish(pool.db_path, pool.published_dir)
    assert gone not in snapshot.read_current(pool.published_dir).manifest["pool"]
    source = serving.routing_source(pool.db_path, pool.published_dir)
    assert gone not in _routed(source, lam=0.0)
    with pytest.raises(serving.RoutingError, match="retired"):
        _routed(source, pool=[gone])


def test_model_cluster_errors_shows_intervals_routing_errors_and_sparse_cells(pool):
    """The view (store and published snapshot alike) carries each cell's evidence, 95% interval, the error routing
    uses (shrunk for count-aware Psi) and the sparse flag; K-NN has no clusters, so no rows."""
    from uniroute.pipeline.serving.user_sql import SNAPSHOT_VIEWS, snapshot_tables
    from uniroute.routers.cluster.psi import SPARSE_CELL

    router = _champion(pool.db_path).router
    query = "select * from model_cluster_errors order by model, cluster"
    with store.opened(pool.db_path, read_only=True) as con:
        view = con.execute(query).df()
    snap = snapshot.read_current(pool.published_dir)
    mirrored = store.sandboxed_over(snapshot_tables(snap), SNAPSHOT_VIEWS, query, store.Sandbox())
    pd.testing.assert_frame_equal(view, mirrored, check_dtype=False)
    if isinstance(router, KnnRouter):
        assert view.empty
        return
    assert list(view.columns) == ["router_id", "model", "cluster", "error", "accuracy", "prompts", "error_lo",
                                  "error_hi", "routing_error", "sparse"]
    assert ((view.error_lo <= view.error) & (view.error <= view.error_hi)).all()
    assert ((view.error_hi - view.error_lo)[view.prompts == 0] == 1.0).all()  # no evidence: the whole range
    assert (view["sparse"] == (view.prompts < SPARSE_CELL)).all()
    order = [router.models.index(m) for m in view.model]
    np.testing.assert_allclose(view.routing_error, router.routing_psi[order, view.cluster])
    if router.kind == "kmeans_shrunk" and router.shrinkage > 0:
        assert not np.allclose(view.routing_error, view.error)


def test_explain_reproduces_the_decision_for_every_kind(pool, monkeypatch):
    """`route --explain --json`: the argmin recomputed from the printed terms (total = error + lambda x cost, ties
    to the cheaper) is the printed model, the router's own route agrees, and the human table shows every rank."""
    monkeypatch.setenv("UNIROUTE_HOME", str(pool.home))
    source = serving.routing_source(pool.db_path, pool.published_dir)
    X = source.embedder().encode(PROMPTS)
    for args in (["--lambda", "0"], ["--lambda", "5"], ["--budget", str(_budget(source.router.kind))], []):
        result = CliRunner().invoke(app, ["route", *PROMPTS, "--explain", "--json", *args], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        decisions = json.loads(result.stdout)
        for decision in decisions:
            terms, lam = decision["explain"], decision["lam"]
            assert sorted(t["model"] for t in terms) == sorted(source.pool)
            for t in terms:
                assert t["lam_cost"] == lam * t["cost"] and t["total"] == t["expected_error"] + t["lam_cost"]
            best = min(terms, key=lambda t: (t["expected_error"] + lam * t["cost"], t["cost"]))
            assert best["model"] == decision["model"] and best["rank"] == 1
            assert [t["model"] for t in terms[1:]] == decision["fallbacks"]
            assert decision["expected_score"] == 1 - best["expected_error"]
            assert decision["expected_cost"] == best["cost"]
            totals = [t["total"] for t in terms]
            assert totals == sorted(totals) and [t["rank"] for t in terms] == list(range(1, len(terms) + 1))
            interval = [t["error_lo"] is not None for t in terms]
            assert all(interval) == (source.router.kind != "knn") and any(interval) == all(interval)
        routed = source.router.route_names(X, decisions[0]["lam"], source.pool).tolist()
        assert [d["model"] for d in decisions] == routed, args
    human = CliRunner().invoke(app, ["route", PROMPTS[0], "--explain", "--lambda", "5"], catch_exceptions=False)
    assert human.exit_code == 0 and "lambda x cost" in human.stdout and "rank" in human.stdout
    assert len([line for line in human.stdout.splitlines() if line.strip()[:1].isdigit()]) == len(source.pool)


def test_published_routes_rank_the_fallbacks_in_the_store_and_the_snapshot(pool):
    """One-hot kinds publish, per cluster and setting, the rest of the pool ranked after the chosen model (rank 1
    of router.cluster_terms), alike in routes.parquet, routes.json and the store; per-prompt kinds publish none."""
    snap = snapshot.read_current(pool.published_dir)
    router, active = snap.router(), snap.manifest["pool"]
    if not router.one_hot:
        assert snap.routes.empty
        return
    in_json = json.loads(snap.files["routes.json"])
    assert [r["fallbacks"] for r in in_json] == [list(f) for f in snap.routes.fallbacks]
    for row in snap.routes.itertuples():
        terms = router.cluster_terms(row.lam, active)
        assert [row.model, *row.fallbacks] == [terms.models[p] for p in terms.order[row.cluster]]
    with store.opened(pool.db_path, read_only=True) as con:
        stored = con.execute("select cluster, grid, budget, model, fallbacks from current_routing_table "
                             "order by grid, budget nulls last, lam, cluster").df()
    published = snap.routes.sort_values(["grid", "budget", "lam", "cluster"], na_position="last")
    assert stored.model.tolist() == published.model.tolist()
    assert [list(f) for f in stored.fallbacks] == [list(f) for f in published.fallbacks]
