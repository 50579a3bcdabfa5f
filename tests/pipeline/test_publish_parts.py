"""Publishing the champion on a real store holding one saved router (no build, no MLflow), and what a publish
reports. Added where the mutation run (make mutation) found publish untested by fast tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from uniroute import store
from uniroute.pipeline import registry, snapshot
from uniroute.pipeline.publish import PublishResult, fingerprint, latest_publication, publish_champion
from uniroute.routers.kmeans import Centroids
from uniroute.routers.router import Router


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
    """A store whose champion routes cheap, big and mid (mid retired), as a build would have saved it."""
    router = Router("toy-embedder", ("cheap", "big", "mid"), np.array([1.0, 10.0, 5.0]),
                    np.array([[0.1, 0.9], [0.5, 0.1], [0.6, 0.6]]),
                    Centroids(np.array([[-1.0, 0.0], [1.0, 0.0]], dtype=np.float32)))
    with store.session(db_path, "test") as s:
        registry.save_router_version(s.con, registry.NewVersion(
            router, "r-001", registry.clustering_id_of(router.assigner), "kmeans", "fp-1", 0.7, True, "test",
            centroids=router.assigner))
        store.write_frame(s.con, "models", pd.DataFrame({
            "model": ["cheap", "big", "mid"], "default_cost": 1.0, "status": ["active", "active", "retired"],
            "first_seen": pd.Timestamp("2026-01-01")}))
    return db_path


def _publish(db_path: Path, published: Path, force: bool = False) -> PublishResult:
    with store.session(db_path, "publish") as s:
        return publish_champion(s.con, published, force=force)


def test_a_publish_writes_the_active_pool_and_records_it(saved: Path, tmp_path: Path):
    published = tmp_path / "published"
    result = _publish(saved, published)
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
    first = _publish(saved, published)
    again = _publish(saved, published)
    assert not again.published and again.version == first.version
    assert again.reason == f"nothing changed since {first.version}" and again.path is None
    forced = _publish(saved, published, force=True)
    assert forced.published and forced.version != first.version


def test_a_store_without_publications_has_no_latest(saved: Path):
    with store.opened(saved, read_only=True) as con:
        assert latest_publication(con) is None


def test_a_champion_with_every_model_retired_is_not_published(saved: Path, tmp_path: Path):
    with store.session(saved, "test") as s:
        s.con.execute("update models set status = 'retired'")
    with pytest.raises(snapshot.PublishError, match="champion r-001 has no active model to publish"):
        _publish(saved, tmp_path / "published")
