"""`mlflow models serve` on the champion answers a routing request over HTTP, for a K-means router on each embedder.

Each case builds a store with one K-means router (K=3 over real embeddings of hand-written prompts), syncs it
to a real SQLite tracking store, starts the real `mlflow models serve -m models:/uniroute-router@champion
--env-manager local` in a subprocess, waits for /ping, posts to /invocations and compares the answer with
Router.route_names on the same prompts. The fitted embedders (tfidf, static, minilm-onnx) travel inside the
logged model; minilm is rebuilt from the installed package.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests import needs
from tests.pipeline.topics import COSTS, MODELS, NEW_PROMPTS, PROMPTS, topic_losses
from uniroute import embed
from uniroute import store as uniroute_store
from uniroute.ingest import process_inbox
from uniroute.pipeline.pool import registry
from uniroute.pipeline.tracking import CHAMPION, REGISTERED_NAME, sync_mlflow
from uniroute.routers.cluster.kmeans import clustering_id_of, fit_centroids
from uniroute.routers.cluster.psi import psi_from_losses
from uniroute.routers.router import Router
from uniroute.routers.tables import default_budget

needs.module("mlflow")

SERVER_START_SECONDS = 240  # a bound for a contended machine (minilm imports torch), not a timing assertion


def _embedder(name: str, cache_dir: Path) -> Any:
    if name == "tfidf":
        return embed.fit_tfidf(PROMPTS, dim=8, seed=0, progress=False)
    return embed.make_embedder(name, cache_dir=cache_dir, progress=False)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> int:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.status


def _post(url: str, body: dict) -> dict:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def _stop(server: subprocess.Popen) -> None:
    """SIGTERM to the server's process group (the mlflow CLI and its uvicorn), SIGKILL if it does not exit."""
    if server.poll() is not None:
        return
    os.killpg(server.pid, signal.SIGTERM)
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait(timeout=30)


def _wait_group_gone(pgid: int, timeout: float = 60.0) -> None:
    """Wait until no process of the group is left: the mlflow CLI may end before its uvicorn finishes shutting down."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    raise AssertionError(f"process group {pgid} still running {timeout:.0f} s after the signal")


def _champion(embedder: Any, name: str, db_path: Path, tracking: tuple) -> Router:
    """A K-means router (K=3) over the embedder, stored and synced to MLflow as its champion."""
    X = np.asarray(embedder.encode(PROMPTS), dtype=np.float32)
    centroids = fit_centroids(X, k=3, seed=0)
    psi = psi_from_losses(centroids.assign(X), topic_losses(), 3, MODELS)
    router = Router(embedder.embedder_id, MODELS, COSTS, psi.values, centroids, psi.counts)
    with uniroute_store.session(db_path, "build") as s:
        registry.save_router_version(s.con, registry.NewVersion(
            router, f"kmeans-{name}", clustering_id_of(centroids), "kmeans", "fp", 0.7, True,
            "test build", centroids=centroids, embedder=embedder))
    with uniroute_store.session(db_path, "reconcile") as s:
        assert sync_mlflow(s.con, *tracking).aliases == {CHAMPION: "1"}
    return router


def _served(tmp_path: Path, tracking: tuple, served_home: Path, extra_env: dict[str, str]
            ) -> tuple[int, subprocess.Popen, float]:
    """(port, process, deadline): `mlflow models serve` of the champion in its own process group, answering /ping."""
    port = _free_port()
    bin_dir = Path(sys.executable).parent  # `mlflow models serve` starts uvicorn from PATH (STACK.md)
    env = {**os.environ, "MLFLOW_TRACKING_URI": tracking[0], "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
           "UNIROUTE_HOME": str(served_home), **extra_env}
    log_path = tmp_path / "serve.log"
    with log_path.open("wb") as log:
        server = subprocess.Popen(
            [str(bin_dir / "mlflow"), "models", "serve", "-m", f"models:/{REGISTERED_NAME}@{CHAMPION}",
             "--env-manager", "local", "-h", "127.0.0.1", "-p", str(port)],
            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=tmp_path,
        )
    deadline = time.monotonic() + SERVER_START_SECONDS
    try:
        while True:
            assert server.poll() is None, f"mlflow models serve exited: {log_path.read_text()[-3000:]}"
            try:
                if _get(f"http://127.0.0.1:{port}/ping") == 200:
                    break
            except (ConnectionError, urllib.error.URLError):
                pass
            assert time.monotonic() < deadline, f"no /ping answer in {SERVER_START_SECONDS} s: {log_path.read_text()}"
            time.sleep(0.5)
    except BaseException:
        _stop(server)
        raise
    return port, server, deadline


@pytest.mark.slow
@pytest.mark.parametrize("embedder_name", ["tfidf", "static", "minilm-onnx", "minilm"])
def test_mlflow_models_serve_routes_with_each_embedder(embedder_name, db_path, tracking, built_embedders_cache,
                                                       tmp_path):
    embedder = _embedder(embedder_name, built_embedders_cache)
    router = _champion(embedder, embedder_name, db_path, tracking)
    served_home = tmp_path / "served-home"  # the server's UNIROUTE_HOME: its decision spool
    port, server, deadline = _served(tmp_path, tracking, served_home, {"UNIROUTE_SPOOL_MAX_SECONDS": "1"})
    try:
        body = {"dataframe_records": [{"prompt": p} for p in NEW_PROMPTS], "params": {"lambda": 0.1}}
        answer = _post(f"http://127.0.0.1:{port}/invocations", body)
        default = _post(f"http://127.0.0.1:{port}/invocations", {"dataframe_split": {
            "columns": ["prompt"], "data": [[p] for p in NEW_PROMPTS]}})
        explained = _post(f"http://127.0.0.1:{port}/invocations", {**body, "params": {"lambda": 0.1, "explain": True}})
        batch = [{"prompt": f"{NEW_PROMPTS[i % len(NEW_PROMPTS)]} {i}"} for i in range(200)]
        many = _post(f"http://127.0.0.1:{port}/invocations", {"dataframe_records": batch})
        # The server finishes its spool file within UNIROUTE_SPOOL_MAX_SECONDS, idle or not.
        spool, served = served_home / "spool" / "decisions", 3 * len(NEW_PROMPTS) + 200
        while sum(len(p.read_text().splitlines()) for p in spool.glob("*.jsonl")) < served:
            assert time.monotonic() < deadline + 60, f"decisions not spooled: {list(spool.iterdir())}"
            time.sleep(0.2)
    finally:
        _stop(server)
    assert server.returncode is not None
    ids = [row["decision_id"] for reply in (answer, default, explained, many) for row in reply["predictions"]]
    # Into the store that holds the served router: a record names a router version of the store it lands in.
    assert process_inbox(db_path, spool, settle_seconds=0.0)
    with uniroute_store.opened(db_path, read_only=True) as con:
        landed = con.execute("select decision_id, source from routing_decisions").fetchall()
    assert sorted(landed) == sorted((i, "pyfunc") for i in ids) and len(set(ids)) == served

    routed = [row["model"] for row in answer["predictions"]]
    assert set(routed) <= set(MODELS)
    assert routed == router.route_names(embedder.encode(NEW_PROMPTS), 0.1).tolist()
    assert [row["prompt_index"] for row in answer["predictions"]] == list(range(len(NEW_PROMPTS)))
    # No setting: the default budget's published lambda (routers.tables.default_budget), as `uniroute route`.
    lam_default = default_budget(router, router.models)[1]
    assert [row["model"] for row in default["predictions"]] == router.route_names(
        embedder.encode(NEW_PROMPTS), lam_default).tolist()
    # The served model explains over HTTP: per prompt the candidates' terms, rank 1 the answer, the rest its fall-backs.
    for row in explained["predictions"]:
        terms = row["explain"]
        assert [t["rank"] for t in terms] == list(range(1, len(MODELS) + 1)) and terms[0]["model"] == row["model"]
        assert [t["model"] for t in terms[1:]] == row["fallbacks"] and "lam_cost" in terms[0]
    assert "explain" not in answer["predictions"][0]


@pytest.mark.slow
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_served_model_stopped_by_a_signal_finishes_its_spool_file(stop, db_path, tracking, tmp_path):
    """uvicorn stops gracefully, then raises SIGTERM again with the handler it found: the process ended before
    atexit, its last spool file stayed `.part` and was never loaded. The file is finished on the signal now."""
    _champion(_embedder("tfidf", tmp_path), "tfidf", db_path, tracking)
    served_home = tmp_path / "served-home"
    # An hour: only the signal finishes the file.
    port, server, _ = _served(tmp_path, tracking, served_home, {"UNIROUTE_SPOOL_MAX_SECONDS": "3600"})
    spool = served_home / "spool" / "decisions"
    try:
        answer = _post(f"http://127.0.0.1:{port}/invocations", {"dataframe_records": [{"prompt": p}
                                                                                      for p in NEW_PROMPTS]})
        assert [p.name.endswith(".part") for p in spool.iterdir()] == [True]
        os.killpg(server.pid, stop)  # the mlflow CLI and its uvicorn, as a terminal's Ctrl-C or a service manager
        server.wait(timeout=60)
        _wait_group_gone(server.pid)
    finally:
        _stop(server)
    assert not list(spool.glob("*.part")), (tmp_path / "serve.log").read_text()[-3000:]
    [outcome] = process_inbox(db_path, spool, settle_seconds=0.0)
    assert outcome.status == "ingested", outcome.error
    with uniroute_store.opened(db_path, read_only=True) as con:
        landed = sorted(r[0] for r in con.execute("select decision_id from routing_decisions").fetchall())
    assert landed == sorted(row["decision_id"] for row in answer["predictions"])
