"""Publishing the champion on a real store holding one saved router (no build, no MLflow), and what a publish
reports. Added where the mutation run (make mutation) found publish untested by fast tests."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.pipeline.toy_store import publish_in_session, save_toy_champion
from uniroute import store
from uniroute.pipeline.pool import registry
from uniroute.pipeline.serving import snapshot
from uniroute.pipeline.serving.publish import (
    PublishResult,
    fingerprint,
    latest_publication,
    publish_champion,
    switch_current_after_commit,
)
from uniroute.routers.knn.neighbours import KnnRouter


def test_a_publish_says_where_it_wrote_and_a_skip_says_why():
    done = PublishResult(True, "v2", "r1", ("a", "b"), "published", Path("/pub/v2"))
    assert done.line() == "published v2 -> /pub/v2"
    assert done.as_dict() == {"published": True, "version": "v2", "router_id": "r1", "pool": ["a", "b"],
                              "reason": "published", "path": "/pub/v2"}
    skipped = PublishResult(False, "v1", "r1", ("a",), "nothing changed since v1")
    assert skipped.line() == "nothing changed since v1"
    assert skipped.as_dict()["path"] is None and skipped.as_dict()["pool"] == ["a"]


# ---- publish_champion on a real store holding one saved router (no build, no MLflow) ----------------------
@pytest.fixture
def saved(db_path: Path) -> Path:
    return save_toy_champion(db_path)


def test_a_publish_writes_the_active_pool_and_records_it(saved: Path, tmp_path: Path):
    published = tmp_path / "published"
    result = publish_in_session(saved, published)
    assert result.published and result.pool == ("cheap", "big") and result.router_id == "r-001"
    snap = snapshot.read_snapshot(result.path)
    assert snap.manifest["pool"] == ["cheap", "big"] and snap.manifest["kind"] == "kmeans"
    assert snap.manifest["fingerprint"] == fingerprint("r-001", ("cheap", "big"))
    assert snap.manifest["embedder_id"] == "toy-embedder" and snapshot.ROUTER_FILE in snap.files
    assert snap.manifest["router_id"] == "r-001"
    assert set(snap.routes.model) <= {"cheap", "big"} and len(snap.budgets) == 20
    with store.opened(saved, read_only=True) as con:
        latest = latest_publication(con)
        assert latest["version"] == result.version and latest["fingerprint"] == snap.manifest["fingerprint"]
        assert latest["checksum"] == snap.manifest["checksum"] and latest["path"] == str(result.path.resolve())
        routes = con.execute("select count(*) from published_routes where version = ?", [result.version]).fetchone()
        budgets = con.execute("select count(*) from published_budgets where version = ?",
                              [result.version]).fetchone()
    assert routes[0] == len(snap.routes) > 0 and budgets[0] == 20


def test_an_unchanged_champion_and_pool_publish_nothing_unless_forced(saved: Path, tmp_path: Path):
    published = tmp_path / "published"
    first = publish_in_session(saved, published)
    again = publish_in_session(saved, published)
    assert not again.published and again.version == first.version
    assert again.reason == f"nothing changed since {first.version}" and again.path is None
    forced = publish_in_session(saved, published, force=True)
    assert forced.published and forced.version != first.version


def test_a_store_without_publications_has_no_latest(saved: Path):
    with store.opened(saved, read_only=True) as con:
        assert latest_publication(con) is None


def test_a_champion_with_every_model_retired_is_not_published(saved: Path, tmp_path: Path):
    with store.session(saved, "test") as s:
        s.con.execute("update models set status = 'retired'")
    with pytest.raises(snapshot.PublishError, match="champion r-001 has no active model to publish"):
        publish_in_session(saved, tmp_path / "published")


def test_a_fingerprint_is_sixteen_hex_digits_of_the_router_pool_and_grids():
    fp = fingerprint("r-001", ("cheap", "big"))
    assert len(fp) == 16 and int(fp, 16) >= 0
    assert fp == fingerprint("r-001", ("big", "cheap")) != fingerprint("r-002", ("big", "cheap"))


def test_a_publish_is_not_forced_by_default(saved: Path, tmp_path: Path):
    publish_in_session(saved, tmp_path / "published")
    with store.session(saved, "publish") as s:
        again = publish_champion(s.con, tmp_path / "published")
    assert not again.published


def test_a_current_that_is_a_folder_stops_a_publish_before_anything_is_written(saved: Path, tmp_path: Path):
    published = tmp_path / "published"
    (published / "current").mkdir(parents=True)
    with pytest.raises(snapshot.PublishError, match="is a directory, not the link"):
        publish_in_session(saved, published)
    assert [p.name for p in published.iterdir()] == ["current"]
    with store.opened(saved, read_only=True) as con:
        assert latest_publication(con) is None


def test_a_snapshot_carries_the_champions_centroids_and_psi(saved: Path, tmp_path: Path):
    snap = snapshot.read_snapshot(publish_in_session(saved, tmp_path / "published").path)
    centroids = pd.read_parquet(io.BytesIO(snap.files["centroids.parquet"]))
    assert centroids.cluster.tolist() == [0, 1]
    assert [list(c) for c in centroids.center] == [[-1.0, 0.0], [1.0, 0.0]]
    psi = pd.read_parquet(io.BytesIO(snap.files[snapshot.PSI_FILE]))
    assert len(psi) == 6 and set(psi.model) == {"cheap", "big", "mid"}
    assert snapshot.EMBEDDER_FILE not in snap.files  # a fixed embedder: nothing fitted travels with the router


def test_a_recorded_version_becomes_current_once_its_session_commits(saved: Path, tmp_path: Path):
    published = tmp_path / "published"
    with store.session(saved, "publish") as s:
        result = publish_champion(s.con, published)
        switch_current_after_commit(s, published, result)
        assert snapshot.current_version(published) is None  # not before the commit
    assert snapshot.current_version(published) == result.version
    with store.session(saved, "publish") as s:
        again = publish_champion(s.con, published)  # nothing changed: nothing to switch
        switch_current_after_commit(s, published, again)
        assert s.after_commit == []
    assert snapshot.current_version(published) == result.version


def test_a_fitted_embedder_travels_in_the_snapshot_beside_its_router(saved: Path, tmp_path: Path):
    with store.session(saved, "test") as s:  # as a TF-IDF build stores it (registry.save_embedder)
        s.con.execute("insert into fitted_embedders values ('toy-embedder', ?, now())", [b"the fitted state"])
    snap = snapshot.read_snapshot(publish_in_session(saved, tmp_path / "published").path)
    assert snap.files[snapshot.EMBEDDER_FILE] == b"the fitted state"


def test_a_router_without_clusters_publishes_an_empty_centroids_table(db_path: Path, tmp_path: Path):
    refs = np.array([[1, 0], [0, 1], [-1, 0]], dtype=np.float32)
    knn = KnnRouter("toy-embedder", ("cheap", "big"), np.array([1.0, 10.0]),
                    np.array([[0.0, 1.0, 1.0], [0.0, 0.0, 0.0]]), refs, ("p0", "p1", "p2"), 2)
    with store.session(db_path, "test") as s:
        registry.save_router_version(s.con, registry.NewVersion(knn, "r-knn", "none", "knn", "fp-1", 0.7, True,
                                                                "test"))
        store.write_frame(s.con, "models", pd.DataFrame({"model": ["cheap", "big"], "default_cost": 1.0,
                                                         "status": "active", "first_seen": pd.Timestamp("2026-01-01")}))
    snap = snapshot.read_snapshot(publish_in_session(db_path, tmp_path / "published").path)
    assert snap.manifest["kind"] == "knn"
    assert len(pd.read_parquet(io.BytesIO(snap.files["centroids.parquet"]))) == 0
