"""MLflow lineage against a real SQLite tracking store in tmp_path: runs, registry aliases, the router pyfunc."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from uniroute.pipeline.tracking import (
    CHALLENGER,
    CHAMPION,
    REGISTERED_NAME,
    champion_version,
    compact_val,
    load_router_model,
    log_build,
    log_onboard,
    log_publish,
    pool_of,
    prompts_of,
    routed_frame,
)
from uniroute.routers.kmeans import Centroids, fit_centroids
from uniroute.routers.psi import psi_from_losses
from uniroute.routers.router import EmbedderMismatch, Router
from uniroute.settings import Settings

mlflow = pytest.importorskip("mlflow")


# ---- fixtures -------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def migrated_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty MLflow SQLite store with its schema migrations applied (they take seconds; a copy is instant)."""
    path = tmp_path_factory.mktemp("mlflow_template") / "mlflow.db"
    mlflow.MlflowClient(tracking_uri=f"sqlite:///{path}").search_experiments()
    return path


@pytest.fixture
def store(settings: Settings, migrated_db: Path) -> tuple[str, Path]:
    """(tracking URI, artifact root) under a fresh UNIROUTE_HOME, its store a copy of the migrated empty one."""
    shutil.copyfile(migrated_db, settings.home / "mlflow.db")
    return settings.mlflow_uri, settings.mlflow_artifacts


@pytest.fixture
def tiny_router() -> Router:
    """Two clusters on a line, three models: 'cheap' wins cluster 0, 'big' wins cluster 1."""
    centroids = Centroids(np.array([[-1.0, 0.0], [1.0, 0.0]], dtype=np.float32))
    psi = np.array([[0.1, 0.9], [0.5, 0.1], [0.6, 0.6]])  # rows: cheap, big, mid
    return Router("toy-embedder", ("cheap", "big", "mid"), np.array([1.0, 10.0, 5.0]), psi, centroids)


@pytest.fixture
def build_files(tmp_path: Path) -> dict[str, Path]:
    """Stand-ins for the build's artifact files: centroids, Psi table, routing table, deferral PNG."""
    folder = tmp_path / "build_out"
    folder.mkdir()
    np.save(folder / "centroids.npy", np.eye(2, dtype=np.float32))
    pd.DataFrame({"model": ["cheap", "big"], "c0": [0.1, 0.5], "c1": [0.9, 0.1]}).to_csv(folder / "psi.csv")
    (folder / "routing_table.json").write_text(json.dumps({"0": "cheap", "1": "big"}))
    # A real (tiny) PNG from matplotlib, as the evaluation writes one.
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(1, 1))
    ax.plot([0, 1], [0.5, 0.8])
    fig.savefig(folder / "deferral.png")
    plt.close(fig)
    return {
        "centroids.npy": folder / "centroids.npy",
        "psi.csv": folder / "psi.csv",
        "routing_table.json": folder / "routing_table.json",
        "deferral_curve.png": folder / "deferral.png",  # logged under its key, not its file name
    }


BUILD_PARAMS = {"k": 2, "embedder_id": "toy-embedder", "pool": ["cheap", "big", "mid"], "data_fingerprint": "abc123"}
BUILD_METRICS = {"area/kmeans": 0.71, "area50/kmeans": 0.33, "qnc/kmeans": 0.8, "peak/kmeans": 0.9}


def _build(store, router, files, router_id, val_area, **kw):
    uri, root = store
    return log_build(uri, root, router, router_id, BUILD_PARAMS, BUILD_METRICS, files, val_area, **kw)


def _client(uri: str):
    return mlflow.MlflowClient(tracking_uri=uri, registry_uri=uri)


def _artifact_paths(client, run_id: str) -> set[str]:
    """Every file path logged to the run (recursively)."""
    out, todo = set(), [None]
    while todo:
        for info in client.list_artifacts(run_id, todo.pop()):
            (todo.append(info.path) if info.is_dir else out.add(info.path))
    return out


# ---- build / onboard / publish runs ---------------------------------------------------------------------


def test_build_run_records_params_metrics_artifacts_and_becomes_champion(store, tiny_router, build_files):
    record = _build(store, tiny_router, build_files, "r-001", val_area=0.70)

    assert record.promoted and record.alias == CHAMPION and record.model_version == "1"
    assert "no champion yet" in record.reason
    client = _client(store[0])
    run = client.get_run(record.run_id)
    assert run.info.status == "FINISHED"
    assert run.data.tags["kind"] == "build" and run.data.tags["router_id"] == "r-001"
    assert run.data.params == {"k": "2", "embedder_id": "toy-embedder", "pool": "cheap,big,mid",
                               "data_fingerprint": "abc123"}
    assert run.data.metrics == pytest.approx({**BUILD_METRICS, "val_area": 0.70})
    assert _artifact_paths(client, record.run_id) == {
        "centroids.npy", "psi.csv", "routing_table.json", "deferral_curve.png"
    }
    experiment = client.get_experiment(run.info.experiment_id)
    assert experiment.name == "uniroute"
    assert experiment.artifact_location == store[1].resolve().as_uri()
    logged = store[1] / record.run_id / "artifacts"
    assert (logged / "deferral_curve.png").read_bytes() == build_files["deferral_curve.png"].read_bytes()

    version = client.get_model_version_by_alias(REGISTERED_NAME, CHAMPION)
    assert str(version.version) == "1" and version.run_id == record.run_id
    assert version.tags["router_id"] == "r-001" and float(version.tags["val_area"]) == 0.70
    assert champion_version(store[0]) == {"version": "1", "run_id": record.run_id, "router_id": "r-001",
                                          "val_area": 0.70}


def test_worse_build_stays_challenger_with_the_reason_and_a_better_one_takes_over(store, tiny_router, build_files):
    first = _build(store, tiny_router, build_files, "r-001", val_area=0.70)
    worse = _build(store, tiny_router, build_files, "r-002", val_area=0.65)

    assert not worse.promoted and worse.alias == CHALLENGER and worse.model_version == "2"
    assert "0.65 < champion version 1" in worse.reason and "challenger" in worse.reason
    client = _client(store[0])
    tags = client.get_run(worse.run_id).data.tags
    assert tags["promoted"] == "false" and tags["promotion_reason"] == worse.reason
    assert champion_version(store[0])["run_id"] == first.run_id
    assert str(client.get_model_version_by_alias(REGISTERED_NAME, CHALLENGER).version) == "2"

    # Equal Area is "not worse": it takes over, and the stale challenger alias is cleared.
    tie = _build(store, tiny_router, build_files, "r-003", val_area=0.70)
    assert tie.promoted and tie.alias == CHAMPION and ">= champion version 1" in tie.reason
    assert champion_version(store[0])["router_id"] == "r-003"
    assert CHALLENGER not in client.get_registered_model(REGISTERED_NAME).aliases


def test_onboard_moves_champion_and_records_the_parent(store, tiny_router, build_files):
    _build(store, tiny_router, build_files, "r-001", val_area=0.70)
    _build(store, tiny_router, build_files, "r-002", val_area=0.60)  # a challenger, not the parent
    onboarded = tiny_router.with_model("newbie", np.array([0.05, 0.95]), cost=0.5)
    uri, root = store

    record = log_onboard(uri, root, onboarded, "r-001+newbie", "r-001", {"model": "newbie"},
                         {"psi_rows": 1.0}, {"psi.csv": build_files["psi.csv"]})

    assert record.promoted and record.alias == CHAMPION and record.model_version == "3"
    assert "r-001 (version 1)" in record.reason
    client = _client(uri)
    run = client.get_run(record.run_id)
    assert run.data.tags["kind"] == "onboard"
    assert run.data.tags["parent_router_id"] == "r-001" and run.data.tags["parent_version"] == "1"
    assert run.data.params == {"model": "newbie"}
    assert _artifact_paths(client, record.run_id) == {"psi.csv"}
    version = client.get_model_version(REGISTERED_NAME, "3")
    assert version.tags["parent_router_id"] == "r-001"
    assert version.tags["val_area_source"] == "inherited from parent version 1"
    assert champion_version(uri) == {"version": "3", "run_id": record.run_id, "router_id": "r-001+newbie",
                                     "val_area": 0.70}
    # The onboarded champion is what the next build must beat.
    assert not _build(store, tiny_router, build_files, "r-004", val_area=0.69).promoted


def test_publish_run(store, build_files):
    uri, root = store
    files = {"routing_table.json": build_files["routing_table.json"]}
    run_id = log_publish(uri, root, "r-001", {"budgets": [0.1, 0.5, 1.0]}, files)

    run = _client(uri).get_run(run_id)
    assert run.data.tags["kind"] == "publish" and run.data.tags["router_id"] == "r-001"
    assert run.data.params == {"budgets": "0.1,0.5,1.0"}
    assert _artifact_paths(_client(uri), run_id) == {"routing_table.json"}


def test_missing_artifact_fails_before_any_run(store, tiny_router, build_files, tmp_path):
    files = {**build_files, "psi.csv": tmp_path / "nope.csv"}
    with pytest.raises(FileNotFoundError, match="nope.csv"):
        _build(store, tiny_router, files, "r-001", val_area=0.7)
    with pytest.raises(ValueError, match="plain file names"):
        _build(store, tiny_router, {"sub/psi.csv": build_files["psi.csv"]}, "r-001", val_area=0.7)
    with pytest.raises(ValueError, match="val_area must be finite"):
        _build(store, tiny_router, build_files, "r-001", val_area=float("nan"))
    assert champion_version(store[0]) is None


def test_store_of_another_home_is_refused(store, tiny_router, build_files, tmp_path):
    _build(store, tiny_router, build_files, "r-001", val_area=0.7)
    with pytest.raises(ValueError, match="artifacts at"):
        log_build(store[0], tmp_path / "elsewhere", tiny_router, "r-002", {}, {}, {}, 0.8)


def test_global_tracking_uri_is_left_as_it_was(store, tiny_router, build_files, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    mlflow.set_tracking_uri(None)
    _build(store, tiny_router, build_files, "r-001", val_area=0.7)
    assert not mlflow.is_tracking_uri_set()
    assert "MLFLOW_TRACKING_URI" not in os.environ


# ---- the pyfunc's routing, without MLflow ---------------------------------------------------------------


def test_routed_frame_lambda_pool_and_budget(tiny_router):
    X = np.array([[-0.9, 0.1], [0.8, 0.0], [1.2, -0.1]], dtype=np.float32)  # clusters 0, 1, 1

    frame = routed_frame(tiny_router, X)
    assert frame["prompt_index"].tolist() == [0, 1, 2]
    assert frame["model"].tolist() == ["cheap", "big", "big"]
    # lambda 0.2: cluster 1 costs big 0.1 + 2.0, cheap 0.9 + 0.2, mid 0.6 + 1.0 -> cheap
    assert routed_frame(tiny_router, X, lam=0.2)["model"].tolist() == ["cheap", "cheap", "cheap"]
    assert routed_frame(tiny_router, X, pool=["cheap", "mid"])["model"].tolist() == ["cheap", "mid", "mid"]
    # Budget 0.1 of the priciest (10) = mean cost 1: only 'cheap' everywhere fits.
    budget = routed_frame(tiny_router, X, budget=0.1, X_val=X)
    assert budget["model"].tolist() == ["cheap", "cheap", "cheap"]
    assert routed_frame(tiny_router, X, budget=1.0, X_val=X)["model"].tolist() == ["cheap", "big", "big"]
    with pytest.raises(ValueError, match="not both"):
        routed_frame(tiny_router, X, lam=0.5, budget=0.5, X_val=X)
    with pytest.raises(ValueError, match="no validation embeddings"):
        routed_frame(tiny_router, X, budget=0.5)
    with pytest.raises(ValueError, match="unknown models"):
        routed_frame(tiny_router, None, pool=["gpt-nope"])
    empty = routed_frame(tiny_router, None)
    assert list(empty.columns) == ["prompt_index", "model"] and len(empty) == 0


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

# Hand-written prompts on three topics (no third-party text); the losses below make each topic's specialist
# the best model there, so the routing differs by cluster.
TOPICS = {
    "math": ["What is 17 times 23?", "Solve for x: 3x + 5 = 20.", "Is 91 a prime number?",
             "Compute the derivative of x squared plus 4x.", "What is the square root of 144?",
             "Add 1234 and 5678.", "Find the area of a circle with radius 3.", "Simplify 12/18."],
    "cooking": ["How long should I boil an egg for a soft yolk?", "What can I use instead of butter in cookies?",
                "How do I make a simple tomato sauce?", "At what temperature should I roast a chicken?",
                "How do I keep rice from getting sticky?", "What spices go well with lentil soup?",
                "How do I knead bread dough by hand?", "How long do pancakes cook on each side?"],
    "code": ["Write a Python function that reverses a list.", "How do I read a CSV file with pandas?",
             "What does a segmentation fault mean in C?", "Explain recursion with a short example in Python.",
             "How do I create a virtual environment in Python?", "Fix this SQL: SELEC name FROM users;",
             "What is the difference between a list and a tuple in Python?", "How do I undo the last git commit?"],
}
NEW_PROMPTS = ["What is 9 plus 10?", "How do I bake a sponge cake?", "How do I sort a dict by value in Python?",
               "Multiply 12 by 12.", "What goes in a Greek salad?"]
MODELS = ("mathwiz", "chef", "coder", "generalist")
COSTS = np.array([2.0, 1.0, 3.0, 10.0])


@pytest.fixture(scope="module")
def embedder():
    embed = pytest.importorskip("uniroute.embed")
    return embed.make_embedder("minilm", progress=False)


@pytest.fixture(scope="module")
def fitted(embedder):
    """A small real Router (K=3 K-means on MiniLM embeddings, Psi from per-topic losses) and its val embeddings."""
    prompts = [p for group in TOPICS.values() for p in group]
    topic = np.repeat(np.arange(3), [len(g) for g in TOPICS.values()])
    X = np.asarray(embedder.encode(prompts), dtype=np.float32)
    centroids = fit_centroids(X, k=3, seed=0)
    # (n, M) losses: each specialist is right on its topic only; the generalist is mostly right everywhere.
    losses = np.full((len(prompts), len(MODELS)), 1.0)
    losses[np.arange(len(prompts)), topic] = 0.0
    losses[:, 3] = 0.25
    psi = psi_from_losses(centroids.assign(X), losses, 3, MODELS)
    router = Router(embedder.embedder_id, MODELS, COSTS, psi.values, centroids, psi.counts)
    return router, X


@pytest.fixture
def champion_model(store, fitted, build_files):
    router, X_val = fitted
    _build(store, router, build_files, "r-real", val_area=0.8, val_embeddings=X_val)
    return load_router_model(f"models:/{REGISTERED_NAME}@{CHAMPION}", tracking_uri=store[0])


def test_pyfunc_routes_like_the_router(champion_model, fitted, embedder):
    router, X_val = fitted
    X = np.asarray(embedder.encode(NEW_PROMPTS), dtype=np.float32)
    request = pd.DataFrame({"prompt": NEW_PROMPTS})

    default = champion_model.predict(request)
    assert default["prompt_index"].tolist() == list(range(len(NEW_PROMPTS)))
    assert default["model"].tolist() == router.route_names(X).tolist()
    # Not a constant router: the specialists win their own clusters at lambda 0.
    assert len(set(default["model"])) > 1
    for lam in (0.01, 0.1, 1.0):
        got = champion_model.predict(request, params={"lambda": lam})
        assert got["model"].tolist() == router.route_names(X, lam).tolist()
    got = champion_model.predict(request, params={"pool": "chef,generalist"})
    assert got["model"].tolist() == router.route_names(X, 0.0, ["chef", "generalist"]).tolist()
    # Budget 0.6 of the priciest pool model (coder, 3.0): a mean cost of 1.8 forces a mix of models.
    pool = ["mathwiz", "chef", "coder"]
    lam = router.lambda_for_budget(X_val, 0.6, pool)
    assert lam > 0
    got = champion_model.predict(request, params={"budget": 0.6, "pool": ",".join(pool)})
    assert got["model"].tolist() == router.route_names(X, lam, pool).tolist()
    with pytest.raises(Exception, match="unknown models in pool"):
        champion_model.predict(request, params={"pool": "chef,nobody"})


def test_pyfunc_refuses_a_router_fitted_on_another_embedder(store, fitted, build_files):
    router, _ = fitted
    foreign = Router("some-other-embedder", router.models, router.costs, router.psi, router.assigner)
    _build(store, foreign, build_files, "r-foreign", val_area=0.8)
    with pytest.raises(EmbedderMismatch, match="some-other-embedder"):
        load_router_model(f"models:/{REGISTERED_NAME}@{CHAMPION}", tracking_uri=store[0])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_mlflow_models_serve_answers_a_routing_request(store, fitted, build_files, embedder):
    """`mlflow models serve --env-manager local` on the champion answers like Router.route_names."""
    router, X_val = fitted
    _build(store, router, build_files, "r-real", val_area=0.8, val_embeddings=X_val)
    port = _free_port()
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "MLFLOW_TRACKING_URI": store[0], "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}
    server = subprocess.Popen(
        [str(Path(bin_dir) / "mlflow"), "models", "serve", "-m", f"models:/{REGISTERED_NAME}@{CHAMPION}",
         "--env-manager", "local", "-h", "127.0.0.1", "-p", str(port)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
    )
    try:
        body = json.dumps({"dataframe_records": [{"prompt": p} for p in NEW_PROMPTS], "params": {"lambda": 0.1}})
        deadline = time.monotonic() + 180  # a bound for a contended machine, not a timing assertion
        while True:
            assert server.poll() is None, server.stderr.read().decode()[-2000:]
            try:
                request = urllib.request.Request(f"http://127.0.0.1:{port}/invocations", data=body.encode(),
                                                 headers={"Content-Type": "application/json"})
                with urllib.request.urlopen(request, timeout=30) as response:
                    answer = json.loads(response.read())
                break
            except (ConnectionError, urllib.error.URLError):
                assert time.monotonic() < deadline, "mlflow models serve did not answer within 180 s"
                time.sleep(0.5)
    finally:
        # The server runs in its own session: stop its whole process group (the CLI and its uvicorn worker).
        os.killpg(server.pid, 15)
        server.wait(timeout=30)
    X = np.asarray(embedder.encode(NEW_PROMPTS), dtype=np.float32)
    assert [row["model"] for row in answer["predictions"]] == router.route_names(X, 0.1).tolist()
    assert [row["prompt_index"] for row in answer["predictions"]] == list(range(len(NEW_PROMPTS)))
