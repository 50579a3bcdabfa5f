"""calibration.traffic_calibration and calibration_at on stores written by hand (no build): the window's edges
(exactly the minimum, an empty window with no minimum, fewer rows read than found), the one-hot weights of a
traffic mix, and every fallback to the validation prompts with its reason (a writer holding the store, a store
from before decision records). Added where the mutation run (make mutation) found them untested."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import numpy as np
import pytest

from uniroute import store
from uniroute.pipeline.serving.calibration import (
    VALIDATION,
    Calibration,
    TrafficWindow,
    calibration_at,
    traffic_calibration,
)
from uniroute.routers.cluster.kmeans import Centroids
from uniroute.routers.router import Router

REPO = Path(__file__).resolve().parents[3]
NOW = datetime(2026, 11, 25, 12, 0)
# Three decisions of embedder e1, an hour apart (oldest first), and one of another embedder that never counts.
VECTORS = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.5, 0.0]]
# Holds the store's writer lock, as a long build would, until killed.
HOLDER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from uniroute import store
    with store.session(Path(sys.argv[1]), "build") as s:
        print("holding", flush=True)
        time.sleep(600)
""")


def _decision(con: duckdb.DuckDBPyConnection, decision: str, at: datetime, embedder: str, vector: list[float]):
    con.execute("insert into decisions (decision_id, schema_version, decided_at, source, router_id, embedder_id, "
                "text_hash, model, lam, propensity, explored, embedding, embedding_dim, source_file, file_hash, "
                "ingested_at) values (?, 1, ?, 'cli', 'r1', ?, 'h', 'a', 0.0, 1.0, false, ?, ?, 'f', 'x', now())",
                [decision, at, embedder, np.asarray(vector, dtype="<f2").tobytes(), len(vector)])


@pytest.fixture(scope="module")
def db_path(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("calibration") / "uniroute.duckdb"
    with store.session(path, "test") as s:
        for i, vector in enumerate(VECTORS):
            _decision(s.con, f"d{i}", NOW - timedelta(hours=3 - i), "e1", vector)
        _decision(s.con, "other", NOW - timedelta(hours=1), "e2", [9.0, 9.0, 9.0])
    return path


def _calibrated(db_path: Path, window: TrafficWindow) -> Calibration:
    with store.opened(db_path, read_only=True) as con:
        return traffic_calibration(con, "e1", window, now=NOW)


def test_a_window_holding_exactly_the_minimum_calibrates_on_the_traffic(db_path):
    exact = _calibrated(db_path, TrafficWindow(min_decisions=3))
    assert exact.on_traffic and exact.X.shape == (3, 3)
    assert exact.source == "traffic window: 3 decisions since 2026-11-25 09:00"
    assert not _calibrated(db_path, TrafficWindow(min_decisions=4)).on_traffic


def test_an_empty_window_is_the_validation_prompts_even_with_no_minimum(db_path):
    empty = _calibrated(db_path, TrafficWindow(days=0.01, min_decisions=0))
    assert not empty.on_traffic
    assert empty.source == f"{VALIDATION} (traffic window 0.01 days: 0 decisions, 0 needed)"


def test_a_window_of_one_decision_reads_only_the_newest_and_dates_the_oldest_in_the_window(db_path):
    one = _calibrated(db_path, TrafficWindow(min_decisions=1, max_decisions=1))
    np.testing.assert_array_equal(one.X, np.array([VECTORS[-1]], dtype=np.float32))
    assert one.source == "traffic window: newest 1 of 3 decisions since 2026-11-25 09:00"
    single = _calibrated(db_path, TrafficWindow(days=1.5 / 24, min_decisions=1))  # the newest alone is in it
    assert single.X.shape == (1, 3) and single.source == "traffic window: 1 decisions since 2026-11-25 11:00"


def test_a_traffic_mix_weighs_the_clusters_by_its_own_prompts(db_path):
    router = Router("e1", ("a", "b"), np.array([1.0, 2.0]), np.array([[0.1, 0.2], [0.3, 0.4]]),
                    Centroids(np.eye(2, 3, dtype=np.float32)), None)
    traffic = _calibrated(db_path, TrafficWindow(min_decisions=1))
    np.testing.assert_array_equal(traffic.cluster_weights(router), [1, 2])


def test_a_calibration_is_compared_and_hashed_by_identity_not_by_its_array():
    """eq=False: a generated __eq__ would compare the (n, d) arrays (ambiguous truth value) and a generated
    __hash__ of a frozen class would hash an ndarray (unhashable)."""
    one, other = Calibration(np.ones((2, 2))), Calibration(np.ones((2, 2)))
    assert one == one and one != other and len({one, other}) == 2


def test_a_store_held_by_a_writer_calibrates_on_the_validation_prompts_at_once(db_path, tmp_path):
    held = tmp_path / "held.duckdb"
    held.write_bytes(db_path.read_bytes())
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(held)], env=env, cwd=REPO,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        busy = calibration_at(held, "e1", TrafficWindow(min_decisions=1))
    finally:
        holder.kill()
        holder.wait(timeout=60)
        holder.stdout.close()
    assert not busy.on_traffic
    assert busy.source == f"{VALIDATION} (the store is busy: its traffic is not readable now)"


def test_a_store_from_before_decision_records_calibrates_on_the_validation_prompts(tmp_path):
    old = tmp_path / "old.duckdb"
    with duckdb.connect(str(old)) as con:
        con.execute("create table routers (router_id varchar)")
        with pytest.raises(duckdb.Error) as missing:
            store.query(con, "traffic_mix", embedder_id="e1", since=NOW, limit=1)
    first_line = str(missing.value).splitlines()[0]
    assert "decisions" in first_line
    calibration = calibration_at(old, "e1", TrafficWindow(min_decisions=1))
    assert not calibration.on_traffic
    assert calibration.source == f"{VALIDATION} (the store's traffic is not readable: {first_line})"


def test_reading_the_calibration_leaves_the_store_free_for_a_writer(db_path, tmp_path):
    path = tmp_path / "free.duckdb"
    path.write_bytes(db_path.read_bytes())
    assert calibration_at(path, "e1", TrafficWindow(min_decisions=1)).on_traffic
    with store.opened(path) as con:  # read-write, in this process: refused while a read-only connection is open
        assert con.execute("select count(*) from decisions").fetchone() == (4,)
