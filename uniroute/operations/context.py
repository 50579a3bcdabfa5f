"""Where an operation works and whom it tells: the store's paths, MLflow's, and the caller's callbacks."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from uniroute import store
from uniroute.errors import UnirouteError
from uniroute.pipeline.pool.evidence import MIN_VAL_ANSWERS
from uniroute.pipeline.pool.evidence_gate import GateThresholds
from uniroute.pipeline.serving.calibration import TrafficWindow
from uniroute.pipeline.serving.records import Recording, recording_of
from uniroute.pipeline.traffic.shadow_config import ShadowConfig
from uniroute.settings import Settings
from uniroute.store.lock import DEFAULT_WAIT_SECONDS

log = logging.getLogger(__name__)

SETTLE_SECONDS = 2.0


class OperationError(UnirouteError, ValueError):
    """An operation asked of a context that cannot run it (e.g. the inbox of a store without one)."""


@dataclass(frozen=True)
class Context:
    """Plain values an operation needs, built once by the edge (the CLI, a flow, a test) from its Settings.

    on_wait hears, once per session, that another operation holds the store (the CLI prints it on stderr, a
    flow logs it); on_warning hears the reconciliation's findings that need a look (repaired or broken).
    """

    db_path: Path
    published_dir: Path
    cache_dir: Path | None = None
    inbox_dir: Path | None = None
    tracking_uri: str | None = None  # None: MLflow is switched off (the store alone)
    artifact_root: Path | None = None
    wait_seconds: float = DEFAULT_WAIT_SECONDS
    settle_seconds: float = SETTLE_SECONDS
    on_wait: Callable[[str], None] | None = None
    on_warning: Callable[[str], None] | None = None
    # Whether reconciliation onboards active models the champion does not route yet. Inside Prefect flows it
    # does not: the event their results emitted triggers the onboarding run, whose job that is (a flow's own
    # reconciliation used to do it first, so the event's run found nothing left to do).
    onboard_missing: bool = True
    min_val_answers: int = MIN_VAL_ANSWERS  # evidence before traffic (pipeline.pool.evidence)
    tmp_dir: Path | None = None  # where `uniroute sql` spills; reconciliation removes a killed run's folders
    spool_dir: Path | None = None  # where routing records its decisions (None: nowhere); the inbox ingests it
    recording: Recording = Recording()  # how decisions are recorded (on by default, no prompt text, no exploration)
    shadow: ShadowConfig = ShadowConfig()  # the nightly build's shadow gate on recent traffic
    traffic_window: TrafficWindow = TrafficWindow()  # the traffic budgets and --max-cost are calibrated on
    gate: GateThresholds = GateThresholds()  # when a newcomer is provisional in a cluster (pipeline.pool.evidence_gate)
    # Where a detached follow-up process writes its output when an onboarding leaves its MLflow logging to it (the
    # CLI, UNIROUTE_MLFLOW_BACKGROUND); None: MLflow is logged before the operation returns.
    mlflow_after_log: Path | None = None

    @classmethod
    def of(cls, settings: Settings, on_wait: Callable[[str], None] | None = None,
           on_warning: Callable[[str], None] | None = None, onboard_missing: bool = True) -> Context:
        """The context of a user's settings: every folder under UNIROUTE_HOME, MLflow as configured."""
        tracking_uri, artifact_root = settings.tracking
        return cls(settings.db_path, settings.published_dir, settings.cache_dir, settings.inbox_dir, tracking_uri,
                   artifact_root, settings.store_wait_seconds, settings.inbox_settle_seconds, on_wait, on_warning,
                   onboard_missing, settings.min_val_answers, settings.tmp_dir, settings.spool_dir,
                   recording_of(settings), ShadowConfig(settings.shadow_window_days, settings.shadow_min_decisions,
                                                        settings.shadow_alpha, settings.shadow_gate),
                   TrafficWindow(settings.budget_traffic_days, settings.budget_traffic_min_decisions,
                                 settings.budget_traffic_max_decisions),
                   GateThresholds(settings.gate_min_cluster_answers, settings.gate_max_interval_width))

    @classmethod
    def at(cls, db_path: Path, published_dir: Path | None = None, cache_dir: Path | None = None) -> Context:
        """The store at db_path alone (no MLflow, no inbox), its snapshots beside it unless told otherwise."""
        return cls(Path(db_path), Path(published_dir) if published_dir is not None else Path(db_path).parent
                   / "published", cache_dir, spool_dir=Path(db_path).parent / "spool" / "decisions")

    @contextmanager
    def session(self, operation: str, inputs: str = "", atomic: bool = True) -> Iterator[store.Session]:
        """One writer session on the store (store.session), telling on_wait when it has to wait."""
        with store.session(self.db_path, operation, inputs=inputs, wait_seconds=self.wait_seconds,
                           on_wait=self.on_wait, atomic=atomic) as s:
            yield s

    def warn(self, line: str) -> None:
        """A finding the user should look at: to the caller's on_warning, else the log."""
        if self.on_warning is not None:
            self.on_warning(line)
        else:
            log.warning(line)
