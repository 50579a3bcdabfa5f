import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from uniroute.pipeline.serving.publish import fingerprint
from uniroute.pipeline.serving.snapshot import (
    SNAPSHOT_FILES,
    PublishError,
    current_manifest,
    read_current,
    read_snapshot,
    write_snapshot,
)
from uniroute.routers.cluster.kmeans import Centroids
from uniroute.routers.router import Router
from uniroute.routers.tables import routing_tables

# Two clusters, three models: cheap model 0 is good on cluster 0, expensive model 2 is good everywhere.
PSI = np.array([[0.1, 0.9], [0.5, 0.5], [0.05, 0.1]])  # (M, K) losses
COSTS = np.array([1.0, 2.0, 10.0])
MODELS = ("cheap", "mid", "big")


def _router(psi=PSI, costs=COSTS):
    return Router("emb", MODELS[: len(costs)], costs, psi, Centroids(np.eye(psi.shape[1], 3, dtype=np.float32)))


def _tables():
    return routing_tables(_router(), MODELS, np.array([3, 1]))


def test_snapshot_round_trip_and_atomic_switch(tmp_path):
    pub = tmp_path / "published"
    centers = np.eye(2, 3, dtype=np.float32)
    write_snapshot(pub, "v1", _tables(), centers, {"router_id": "r1"})
    first = read_current(pub)
    assert first.manifest["router_id"] == "r1" and first.manifest["version"] == "v1"
    write_snapshot(pub, "v2", _tables(), centers, {"router_id": "r2"})
    assert read_current(pub).manifest["router_id"] == "r2"
    assert read_snapshot(pub / "v1").manifest["router_id"] == "r1"  # old versions stay readable
    with pytest.raises(PublishError, match="already exists"):
        write_snapshot(pub, "v2", _tables(), centers, {})


def test_tampered_snapshot_fails_its_checksum(tmp_path):
    pub = tmp_path / "published"
    write_snapshot(pub, "v1", _tables(), np.zeros((2, 3), np.float32), {})
    (pub / "v1" / "routes.json").write_text("[]")
    with pytest.raises(PublishError, match="checksum"):
        read_current(pub)


def test_nothing_published_is_a_clear_error(tmp_path):
    with pytest.raises(PublishError, match="nothing published"):
        read_current(tmp_path)
    assert current_manifest(tmp_path) is None


PUBLISH_LOOP = textwrap.dedent(
    """
    import sys, numpy as np
    from pathlib import Path
    from uniroute.pipeline.serving.snapshot import write_snapshot
    from uniroute.routers.tables import routing_tables
    psi = np.random.default_rng(0).random((6, 40))
    from uniroute.routers.cluster.kmeans import Centroids
    from uniroute.routers.router import Router
    centers = np.random.default_rng(1).random((40, 384)).astype("float32")
    router = Router("e", tuple("abcdef"), np.arange(1.0, 7.0), psi, Centroids(centers))
    tables = routing_tables(router, tuple("abcdef"), np.ones(40, dtype=int))
    i = 0
    while True:
        write_snapshot(Path(sys.argv[1]), f"v{i:06d}", tables, centers, {"i": i})
        print(i, flush=True)
        i += 1
    """
)


@pytest.mark.slow
def test_killed_publisher_leaves_a_loadable_current(tmp_path):
    pub = tmp_path / "published"
    write_snapshot(pub, "base", _tables(), np.zeros((2, 3), np.float32), {"i": -1})
    rng = np.random.default_rng(0)
    for _ in range(5):
        proc = subprocess.Popen([sys.executable, "-c", PUBLISH_LOOP, str(pub)], stdout=subprocess.PIPE, text=True)
        proc.stdout.readline()  # at least one publish finished; kill somewhere inside a later one
        time.sleep(float(rng.uniform(0.0, 0.3)))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        snapshot = read_current(pub)  # verifies the checksum of every file
        assert set(snapshot.manifest["files"]) == set(SNAPSHOT_FILES)
        assert not snapshot.path.name.startswith(".")  # current never points at a staging folder


@pytest.mark.slow
def test_reader_never_sees_a_partial_table_during_publishing(tmp_path):
    pub = tmp_path / "published"
    write_snapshot(pub, "base", _tables(), np.zeros((2, 3), np.float32), {"i": -1})
    proc = subprocess.Popen([sys.executable, "-c", PUBLISH_LOOP, str(pub)], stdout=subprocess.PIPE, text=True)
    errors: list[Exception] = []
    reads = 0
    seen_versions = set()
    stop = threading.Event()

    def reader():
        nonlocal reads
        while not stop.is_set():
            try:
                snapshot = read_current(pub)
                assert len(snapshot.routes) == len(json.loads((snapshot.path / "routes.json").read_text()))
                seen_versions.add(snapshot.manifest["version"])
                reads += 1
            except Exception as exc:  # collected and re-raised below: the test fails on any partial read
                errors.append(exc)

    thread = threading.Thread(target=reader)
    thread.start()
    deadline = time.monotonic() + 6
    while time.monotonic() < deadline and len(seen_versions) < 5:
        time.sleep(0.1)
    stop.set()
    thread.join()
    proc.kill()
    proc.wait()
    assert not errors, errors[:3]
    assert reads > 10 and len(seen_versions) >= 2


def test_fingerprint_depends_on_router_and_pool_only():
    assert fingerprint("r", ("a", "b")) == fingerprint("r", ("b", "a"))
    assert fingerprint("r", ("a",)) != fingerprint("r", ("a", "b"))
    assert fingerprint("r1", ("a",)) != fingerprint("r2", ("a",))


def test_write_snapshot_leaves_no_staging_folder(tmp_path: Path):
    pub = tmp_path / "published"
    write_snapshot(pub, "v1", _tables(), np.zeros((2, 3), np.float32), {})
    assert sorted(p.name for p in pub.iterdir()) == ["current", "v1"]
