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

from uniroute import publish
from uniroute.cluster import Centroids
from uniroute.route import Router

# Two clusters, three models: cheap model 0 is good on cluster 0, expensive model 2 is good everywhere.
PSI = np.array([[0.1, 0.9], [0.5, 0.5], [0.05, 0.1]])  # (M, K) losses
COSTS = np.array([1.0, 2.0, 10.0])
MODELS = ("cheap", "mid", "big")


def _router(psi=PSI, costs=COSTS):
    return Router("emb", MODELS[: len(costs)], costs, psi, Centroids(np.eye(psi.shape[1], 3, dtype=np.float32)))


def test_budget_rows_use_the_smallest_lambda_that_meets_the_budget():
    tables = publish.routing_tables(_router(), MODELS, np.array([1, 1]))
    routes = tables.routes[tables.routes.grid == "budget"]
    # Budget 1.0 allows the best-quality choice; 0.55 moves cluster 0 to cheap: (0.5*1 + 0.5*10)/10 = 0.55.
    assert routes[routes.budget == 1.0].model.tolist() == ["big", "big"]
    assert routes[routes.budget == 0.6].model.tolist() == ["cheap", "big"]
    assert routes[routes.budget == 0.1].model.tolist() == ["cheap", "cheap"]


def test_unreachable_budget_publishes_the_cheapest_routing():
    psi = np.array([[0.5, 0.5], [0.1, 0.1]])
    tables = publish.routing_tables(_router(psi, np.array([5.0, 10.0])), MODELS[:2], np.array([1, 3]))
    low = tables.budgets[(tables.budgets.grid == "budget") & (tables.budgets.budget == 0.1)].iloc[0]
    assert low.expected_cost == pytest.approx(0.5)  # the cheapest model costs half of the priciest


def test_routing_tables_cover_the_grids_and_cost_falls_with_budget():
    tables = publish.routing_tables(_router(), MODELS, np.array([1, 1]))
    assert len(tables.routes) == 2 * (len(publish.BUDGETS) + len(publish.NORMALISED_LAMBDAS))
    budgets = tables.budgets[tables.budgets.grid == "budget"]
    assert (budgets.expected_cost <= budgets.budget + 1e-9).all()
    assert budgets.expected_score.is_monotonic_increasing
    top = tables.routes[(tables.routes.grid == "budget") & (tables.routes.budget == 1.0)]
    assert top.model.tolist() == ["big", "big"]


def _tables():
    return publish.routing_tables(_router(), MODELS, np.array([3, 1]))


def test_snapshot_round_trip_and_atomic_switch(tmp_path):
    pub = tmp_path / "published"
    centers = np.eye(2, 3, dtype=np.float32)
    publish.write_snapshot(pub, "v1", _tables(), centers, {"router_id": "r1"})
    first = publish.read_current(pub)
    assert first.manifest["router_id"] == "r1" and first.manifest["version"] == "v1"
    publish.write_snapshot(pub, "v2", _tables(), centers, {"router_id": "r2"})
    assert publish.read_current(pub).manifest["router_id"] == "r2"
    assert publish.read_snapshot(pub / "v1").manifest["router_id"] == "r1"  # old versions stay readable
    with pytest.raises(publish.PublishError, match="already exists"):
        publish.write_snapshot(pub, "v2", _tables(), centers, {})


def test_tampered_snapshot_fails_its_checksum(tmp_path):
    pub = tmp_path / "published"
    publish.write_snapshot(pub, "v1", _tables(), np.zeros((2, 3), np.float32), {})
    (pub / "v1" / "routes.json").write_text("[]")
    with pytest.raises(publish.PublishError, match="checksum"):
        publish.read_current(pub)


def test_nothing_published_is_a_clear_error(tmp_path):
    with pytest.raises(publish.PublishError, match="nothing published"):
        publish.read_current(tmp_path)
    assert publish.current_manifest(tmp_path) is None


PUBLISH_LOOP = textwrap.dedent(
    """
    import sys, numpy as np
    from pathlib import Path
    from uniroute import publish
    psi = np.random.default_rng(0).random((6, 40))
    from uniroute.cluster import Centroids
    from uniroute.route import Router
    centers = np.random.default_rng(1).random((40, 384)).astype("float32")
    router = Router("e", tuple("abcdef"), np.arange(1.0, 7.0), psi, Centroids(centers))
    tables = publish.routing_tables(router, tuple("abcdef"), np.ones(40, dtype=int))
    i = 0
    while True:
        publish.write_snapshot(Path(sys.argv[1]), f"v{i:06d}", tables, centers, {"i": i})
        print(i, flush=True)
        i += 1
    """
)


@pytest.mark.slow
def test_killed_publisher_leaves_a_loadable_current(tmp_path):
    pub = tmp_path / "published"
    publish.write_snapshot(pub, "base", _tables(), np.zeros((2, 3), np.float32), {"i": -1})
    rng = np.random.default_rng(0)
    for _ in range(5):
        proc = subprocess.Popen([sys.executable, "-c", PUBLISH_LOOP, str(pub)], stdout=subprocess.PIPE, text=True)
        proc.stdout.readline()  # at least one publish finished; kill somewhere inside a later one
        time.sleep(float(rng.uniform(0.0, 0.3)))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        snapshot = publish.read_current(pub)  # verifies the checksum of every file
        assert set(snapshot.manifest["files"]) == set(publish.SNAPSHOT_FILES)
        assert not snapshot.path.name.startswith(".")  # current never points at a staging folder


@pytest.mark.slow
def test_reader_never_sees_a_partial_table_during_publishing(tmp_path):
    pub = tmp_path / "published"
    publish.write_snapshot(pub, "base", _tables(), np.zeros((2, 3), np.float32), {"i": -1})
    proc = subprocess.Popen([sys.executable, "-c", PUBLISH_LOOP, str(pub)], stdout=subprocess.PIPE, text=True)
    errors: list[Exception] = []
    reads = 0
    seen_versions = set()
    stop = threading.Event()

    def reader():
        nonlocal reads
        while not stop.is_set():
            try:
                snapshot = publish.read_current(pub)
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
    assert publish.fingerprint("r", ("a", "b")) == publish.fingerprint("r", ("b", "a"))
    assert publish.fingerprint("r", ("a",)) != publish.fingerprint("r", ("a", "b"))
    assert publish.fingerprint("r1", ("a",)) != publish.fingerprint("r2", ("a",))


def test_write_snapshot_leaves_no_staging_folder(tmp_path: Path):
    pub = tmp_path / "published"
    publish.write_snapshot(pub, "v1", _tables(), np.zeros((2, 3), np.float32), {})
    assert sorted(p.name for p in pub.iterdir()) == ["current", "v1"]
