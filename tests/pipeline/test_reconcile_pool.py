"""Reconciliation's pool check on a real store: an active model the champion does not route is reported
(check only), left to its onboarding run (a flow's start), onboarded (doctor), or reported when it cannot be.
Added where the mutation run (make mutation) found the pool check untested by fast tests."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import ingest
from tests.pipeline.pool.test_battles import _battles_csv, _set_cost
from tests.pipeline.pool.test_onboard import PROMPTS, _write_long, champion, champion_db  # noqa: F401 (fixture)
from uniroute import store
from uniroute.pipeline.reconcile import Report, reconcile


def _pool(report: Report) -> list[tuple[str, str]]:
    return [(f.status, f.detail) for f in report.findings if f.check == "pool"]


def _with_newcomer(db_path: Path, tmp_path: Path) -> Path:
    """c: six validation results on the champion's clustered prompts, with a cost: onboardable, not routed."""
    ingest(db_path, _write_long(tmp_path / "c.csv", "c", [1, 0, 0, 1, 1, 0], 2.0), split="val", progress=False)
    return db_path


def test_a_model_missing_from_the_champion_is_broken_when_only_checking(champion_db, tmp_path):  # noqa: F811
    db = _with_newcomer(champion_db, tmp_path)
    with store.session(db, "doctor") as s:
        report = reconcile(s, tmp_path / "published", None, None, repair=False)
    assert _pool(report) == [("broken", "active models ['c'] are not in the champion router")]
    assert not report.healthy and champion(db).router_id == "kmeans-parent"


def test_a_flow_start_leaves_the_missing_model_to_its_onboarding_run(champion_db, tmp_path):  # noqa: F811
    db = _with_newcomer(champion_db, tmp_path)
    with store.session(db, "flow") as s:
        report = reconcile(s, tmp_path / "published", None, None, onboard_missing=False)
    [(status, detail)] = _pool(report)
    assert status == "pending" and detail.startswith("active models ['c'] wait for their onboarding run")
    assert report.healthy and champion(db).router_id == "kmeans-parent"


def test_doctor_onboards_the_missing_model_by_default(champion_db, tmp_path):  # noqa: F811
    db = _with_newcomer(champion_db, tmp_path)
    with store.session(db, "doctor") as s:  # repair and onboard_missing by default: what `uniroute doctor` does
        report = reconcile(s, tmp_path / "published", None, None)
    child = champion(db)
    assert child.router.models == ("a", "b", "c") and child.parent_id == "kmeans-parent"
    assert _pool(report) == [("repaired", f"onboarded ['c'] (were missing from the champion) -> router "
                                          f"{child.router_id}")]
    with store.session(db, "doctor") as s:
        assert _pool(reconcile(s, tmp_path / "published", None, None)) == [
            ("ok", f"every active model is routed by champion {child.router_id}")]


def test_a_missing_model_that_cannot_be_onboarded_is_broken(champion_db, tmp_path):  # noqa: F811
    rows = [(p, "n", "stranger", "model_a") for p in PROMPTS]  # battles only, none against the pool
    ingest(champion_db, _battles_csv(tmp_path / "n.csv", rows), progress=False)
    _set_cost(champion_db, "n", 0.5)
    with store.session(champion_db, "doctor") as s:
        report = reconcile(s, tmp_path / "published", None, None)
    [(status, detail)] = _pool(report)
    assert status == "broken" and detail.startswith(
        "active models ['n'] are not in the champion router and cannot be onboarded: models ['n'] have no battle")
    assert champion(champion_db).router_id == "kmeans-parent"
