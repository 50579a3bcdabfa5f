"""A gateway under test: a toy store (tests/pipeline/toy_store.py: cheap, big, mid retired) with prices, published;
local OpenAI-compatible backends for cheap and big; the gateway's endpoint in a uvicorn thread on 127.0.0.1."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from dataclasses import dataclass, replace
from datetime import date, datetime
from pathlib import Path

import numpy as np
import pandas as pd
import uvicorn

from deployments.backends import Backend, write_deployments
from deployments.serve import free_port, wait_for
from tests.pipeline.toy_store import publish_in_session, save_toy_champion
from uniroute import operations, store
from uniroute.gateway.endpoint import Gateway, gateway_app
from uniroute.gateway.launch import GatewayPlaces, open_gateway
from uniroute.pipeline.serving import snapshot

KEY_VAR = "UNIROUTE_TEST_GATEWAY_KEY"
KEY = "sk-test-do-not-show-0123456789"
# Per million tokens: the toy router's expected costs are 1 (cheap) and 10 (big) per call.
PRICES = {"cheap": (100.0, 200.0), "big": (1000.0, 3000.0)}


class ToyEmbedder:
    """The toy router's embedder: a prompt saying "hard" lands in cluster 1 (big is best), any other in cluster 0."""

    embedder_id = "toy-embedder"

    def encode(self, texts: list[str]) -> np.ndarray:
        return np.array([[1.0, 0.0] if "hard" in t else [-1.0, 0.0] for t in texts], dtype=np.float32)


def set_prices(db_path: Path) -> None:
    with store.session(db_path, "test") as s:
        store.write_frame(s.con, "prices", pd.DataFrame({
            "model": list(PRICES), "valid_from": date(1970, 1, 1),
            "input_per_mtok": [p[0] for p in PRICES.values()], "output_per_mtok": [p[1] for p in PRICES.values()],
            "per_call": [None, None], "source": "test", "set_at": datetime(2026, 1, 1)}))


def publish_current(db_path: Path, published: Path, force: bool = False) -> str:
    result = publish_in_session(db_path, published, force=force)
    snapshot.make_current(published, str(result.version))
    return str(result.version)


def deployments_yaml(path: Path, backends: dict[str, Backend], timeout: float = 5.0) -> Path:
    return write_deployments(path, backends, KEY_VAR, timeout)


@dataclass
class Running:
    """A gateway serving on a port, its backends, its home's folders."""

    gateway: Gateway
    backends: dict[str, Backend]
    home: Path
    port: int
    server: uvicorn.Server
    thread: threading.Thread

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def db_path(self) -> Path:
        return self.home / "uniroute.duckdb"

    def context(self) -> operations.Context:
        return replace(operations.Context.at(self.db_path, self.home / "published"), inbox_dir=self.home / "inbox",
                       settle_seconds=0.0)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.gateway.live.stop()
        if self.gateway.spool is not None:
            self.gateway.spool.close()
        for backend in self.backends.values():
            if backend._thread.is_alive():
                backend.kill()


def start(home: Path, latency: float = 0.0, spool_seconds: float = 60.0,
          deployed: tuple[str, ...] = ("cheap", "big", "mid")) -> Running:
    """A toy store published under home, backends for the deployed models, and a gateway serving them."""
    home.mkdir(parents=True, exist_ok=True)
    db_path = save_toy_champion(home / "uniroute.duckdb")
    set_prices(db_path)
    publish_current(db_path, home / "published")
    backends = {name: Backend(name, latency=latency).start() for name in deployed}
    places = GatewayPlaces(home / "published", db_path, home / "spool" / "decisions", home / "inbox",
                           deployments_yaml(home / "deployments.yaml", backends))
    gateway = open_gateway(places, embedder_of=lambda source: ToyEmbedder(), spool_seconds=spool_seconds)
    gateway.live.start()
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(gateway_app(gateway), host="127.0.0.1", port=port, log_level="warning",
                                           lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    return Running(gateway, backends, home, port, server, thread)


# A router a gateway in another process can load: its embedder (TF-IDF, fitted here) travels in the publication,
# where the toy router's ToyEmbedder lives only in this process. Prompts saying "hard" land in cluster 1 (big).
PORTABLE_TEXTS = ["an easy question", "easy small talk", "an easy one", "a hard proof", "hard algebra", "a hard one"]


def save_portable_champion(db_path: Path) -> Path:
    """Save router r-001 (cheap, big; mid retired) on a TF-IDF embedder stored with it as the promoted champion."""
    from uniroute.embed.tfidf import fit_tfidf
    from uniroute.pipeline.pool import registry
    from uniroute.routers.cluster.kmeans import Centroids, clustering_id_of
    from uniroute.routers.router import Router

    embedder = fit_tfidf(PORTABLE_TEXTS, dim=2, progress=False)
    X = embedder.encode(PORTABLE_TEXTS)
    centers = np.stack([X[:3].mean(axis=0), X[3:].mean(axis=0)]).astype(np.float32)
    router = Router(embedder.embedder_id, ("cheap", "big", "mid"), np.array([1.0, 10.0, 5.0]),
                    np.array([[0.1, 0.9], [0.5, 0.1], [0.6, 0.6]]), Centroids(centers))
    with store.session(db_path, "test") as s:
        registry.save_embedder(s.con, embedder)
        registry.save_router_version(s.con, registry.NewVersion(
            router, "r-001", clustering_id_of(router.assigner), "kmeans", "fp-1", 0.7, True, "test",
            centroids=router.assigner, embedder=embedder))
        store.write_frame(s.con, "models", pd.DataFrame({
            "model": ["cheap", "big", "mid"], "default_cost": 1.0, "status": ["active", "active", "retired"],
            "first_seen": pd.Timestamp("2026-01-01")}))
    return db_path


def portable_home(home: Path, backends: dict[str, Backend]) -> Path:
    """A home a `uniroute gateway` subprocess serves: the portable champion published, prices, and
    $UNIROUTE_HOME/deployments.yaml over the backends."""
    home.mkdir(parents=True, exist_ok=True)
    db_path = save_portable_champion(home / "uniroute.duckdb")
    set_prices(db_path)
    publish_current(db_path, home / "published")
    deployments_yaml(home / "deployments.yaml", backends)
    return home


def gateway_process(home: Path, port: int, env: dict[str, str]) -> subprocess.Popen:
    """`uniroute gateway` serving home (its default deployments file) on port, answering /v1/models."""
    proc = subprocess.Popen([sys.executable, "-m", "uniroute", "gateway", "--port", str(port)], env=env | {
        "UNIROUTE_HOME": str(home)}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    wait_for(f"http://127.0.0.1:{port}/v1/models", 180, proc)
    return proc
