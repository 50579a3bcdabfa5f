"""Has the traffic drifted from what the champion was trained on? The recent decisions' prompts (their stored
embeddings) against the champion's training prompts: how far the cluster mix moved (total variation distance of
the cluster shares, 0 = same mix, 1 = disjoint) and what share of the traffic is far from every centroid (beyond
the distance 95% of training prompts are within: about 5% when the traffic is like the training prompts).

The library computes and says; the scheduled flow emits `uniroute.traffic.drifted` when `announce`, and the
deployment trigger in prefect.yaml runs the nightly build early. Only decisions routed since the champion was
created count, so a new champion starts from fresh traffic.

Drift is announced once per champion and training data (`drift_announcements`, keyed by the champion's router
id and a fingerprint of the ingested files but the traffic's: training_fingerprint). While the traffic stays
drifted, each later check says it was announced and `announce` is False, so the build the event started is not
started again every run for the same champion on the same data (a build that kept the champion would otherwise
be re-run every 15 minutes). A new champion, or new training data ingested, can fire again.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta

import numpy as np

from uniroute import store
from uniroute.pipeline.pool import registry
from uniroute.pipeline.serving.calibration import stacked_embeddings
from uniroute.pipeline.serving.records import centroid_distances


@dataclass(frozen=True)
class DriftThresholds:
    """When traffic counts as drifted (settings drift_*): the window, the decisions it needs, and the limits."""

    days: float = 1.0
    min_decisions: int = 200
    mix: float = 0.25  # total variation distance between the traffic's and the training prompts' cluster shares
    far: float = 0.25  # share of traffic prompts beyond the training prompts' 95% centroid distance
    max_decisions: int = 50_000  # the newest this many decisions of the window are read


@dataclass(frozen=True)
class DriftCheck:
    """What the check found: drifted or not, the measures and the why, in one line."""

    drifted: bool
    router_id: str | None
    decisions: int
    mix_distance: float | None
    far_share: float | None
    reason: str
    traffic_shares: tuple[float, ...] = ()
    training_shares: tuple[float, ...] = ()
    data_fingerprint: str | None = None  # the training data the champion was checked against (ingested files)
    announced_at: str | None = None  # when drift was announced for this champion on this data (None: not yet)

    @property
    def announce(self) -> bool:
        """Drifted and not yet announced for this champion on this training data: emit the event now."""
        return self.drifted and self.announced_at is None

    def line(self) -> str:
        return self.reason

    def as_dict(self) -> dict:
        return {**asdict(self), "announce": self.announce}


def training_fingerprint(con: store.Connection) -> str:
    """A short hash of the training data ingested (every file but decision records and outcomes: traffic lands
    every few minutes and would make each check look like new training data)."""
    files = store.query(con, "training_fingerprint").iloc[0, 0]
    return hashlib.sha256(files.encode()).hexdigest()[:16]


def total_variation(p: np.ndarray, q: np.ndarray) -> float:
    """Half the L1 distance between two distributions over the same clusters (0 same, 1 disjoint)."""
    return float(0.5 * np.abs(np.asarray(p, float) - np.asarray(q, float)).sum())


def check_drift(con: store.Connection, thresholds: DriftThresholds, now: datetime | None = None) -> DriftCheck:
    """The champion's traffic since max(now - days, its creation) against its training prompts (a connection with
    the `embeddings` view: store.open_read_only or a session)."""
    now = now or datetime.now(UTC).replace(tzinfo=None)
    champion_id = registry.champion_id(con)
    if champion_id is None:
        return DriftCheck(False, None, 0, None, None, "no drift check: no champion router yet")
    champion = registry.load_champion(con)
    router = champion.router
    centroids = router.psi_centroids()
    if centroids is None:
        return DriftCheck(False, champion_id, 0, None, None,
                          f"no drift check: champion {champion_id} routes by neighbours (no clusters to compare)")
    since = max(now - timedelta(days=thresholds.days), champion.created_at.replace(tzinfo=None))
    rows = store.query(con, "traffic_mix", embedder_id=router.embedder_id, since=since,
                       limit=max(thresholds.max_decisions, 1))
    X = stacked_embeddings(rows, int(centroids.centers.shape[1]))
    n = len(X)
    if n < thresholds.min_decisions:
        return DriftCheck(False, champion_id, n, None, None,
                          f"no drift check: {n} decisions since {since:%Y-%m-%d %H:%M} for champion {champion_id}, "
                          f"{thresholds.min_decisions} needed")
    training = store.query(con, "drift_training", router_id=champion_id)
    if training.empty:
        return DriftCheck(False, champion_id, n, None, None,
                          f"no drift check: champion {champion_id} has no training prompts with embeddings")
    # The router has centroids (checked above), so its prompt clusters and distances are not None.
    k = int(max(training.cluster.max(), centroids.centers.shape[0] - 1)) + 1
    train_counts = np.bincount(training.cluster.to_numpy(), weights=training.prompts.to_numpy(), minlength=k)
    traffic_counts = np.bincount(router.prompt_clusters(X), minlength=k)  # type: ignore[arg-type]  # has clusters
    p, q = traffic_counts / traffic_counts.sum(), train_counts / train_counts.sum()
    mix = total_variation(p, q)
    far = float((centroid_distances(router, X)  # type: ignore[operator, union-attr]  # has centroids
                 > float(training.far_threshold.iloc[0])).mean())
    drifted = mix > thresholds.mix or far > thresholds.far
    fingerprint = training_fingerprint(con)
    # A store not yet upgraded to drift_announcements (read-only here) has announced nothing.
    announced = (store.query_row(con, "drift_announced", router_id=champion_id, data_fingerprint=fingerprint)
                 if store.query_row(con, "table_exists",  # type: ignore[index]  # one row, true or false
                                    table_name="drift_announcements")[0] else None)
    announced_at = None if announced is None else f"{announced[0]:%Y-%m-%d %H:%M:%S}"
    verdict = "drifted" if drifted else "no drift"
    if drifted and announced_at is not None:
        verdict = (f"drifted (announced at {announced_at} for this champion and training data: not again until a "
                   "new champion or new training data)")
    reason = (f"{verdict}: {n} decisions since {since:%Y-%m-%d %H:%M} against champion {champion_id}'s training "
              f"prompts: cluster mix distance {mix:.3f} (limit {thresholds.mix:g}), far from every centroid "
              f"{far:.1%} (limit {thresholds.far:.0%}; training 5%)")
    return DriftCheck(drifted, champion_id, n, mix, far, reason, tuple(map(float, p)), tuple(map(float, q)),
                      fingerprint, announced_at)


def record_announcement(con: store.Connection, check: DriftCheck, now: datetime | None = None) -> bool:
    """Record that drift was announced for check's champion on its training data (in the caller's transaction);
    False when there was nothing to announce or it already was."""
    if not check.announce or check.router_id is None or check.data_fingerprint is None:
        return False
    if store.query_row(con, "drift_announced", router_id=check.router_id,
                       data_fingerprint=check.data_fingerprint) is not None:
        return False
    store.execute(con, "drift_announce", router_id=check.router_id, data_fingerprint=check.data_fingerprint,
                  announced_at=now or datetime.now(UTC).replace(tzinfo=None), decisions=check.decisions,
                  mix_distance=check.mix_distance, far_share=check.far_share, reason=check.reason)
    return True
