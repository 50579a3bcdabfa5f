"""Rolling the champion back to an earlier version: a recorded move, never an edit of the routers table.

In the caller's session: a row in `champion_moves` makes the chosen version the newest row of `champion_history`,
which is what every champion query reads; the caller republishes in the same session, so the store's champion
and the published tables move in one commit, `published/current` switches after it, and reconciliation moves
MLflow's champion alias. A kill before the commit leaves the old champion everywhere; after it, doctor (or the
next command's reconcile) finishes the switch and the alias, so no state mixes the two.

A model added since the version rolled back to was the champion refuses the rollback unless forced; forced, the
model is onboarded onto that version in the same session, so the pool stays whole and the rollback undoes the
router, not the pool. Only a version that was the champion once can be rolled back to: a challenger the build did
not promote, or a candidate kind, was never served, and serving it is a decision a build makes on validation, not
an undo.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from uniroute import store
from uniroute.errors import UnirouteError
from uniroute.pipeline.pool import registry
from uniroute.pipeline.pool.evidence import MIN_VAL_ANSWERS
from uniroute.pipeline.pool.evidence_gate import GateThresholds
from uniroute.pipeline.pool.onboard import onboard_models

log = logging.getLogger(__name__)


class RollbackError(UnirouteError, ValueError):
    """A rollback that cannot be made; the message says why and what would make it."""


@dataclass(frozen=True)
class RollbackResult:
    """What a rollback changed: the champion before and after, the models the version rolled back to did not
    route (forced), and the child version that onboarded them onto it (None: nothing was missing)."""

    router_id: str
    from_router_id: str
    moved: bool  # False: the version was the champion already, nothing changed
    missing: tuple[str, ...] = field(default=())
    onboarded_router_id: str | None = None

    def as_dict(self) -> dict:
        return {**self.__dict__, "missing": list(self.missing)}

    def line(self) -> str:
        if not self.moved:
            return f"{self.router_id} is the champion already; nothing to roll back"
        line = f"rolled back the champion from {self.from_router_id} to {self.router_id}"
        if self.missing:
            line += f"; onboarded {', '.join(self.missing)} onto it from their validation results -> router " \
                    f"{self.onboarded_router_id}"
        return line


def rollback_target(con: store.Connection, router_id: str | None) -> str:
    """The version to roll back to: the one named, or (None) the champion promoted before the current one, so
    that repeated rollbacks walk back through the history (a named version jumps, forwards too)."""
    if router_id is not None:
        return router_id
    row = store.query_row(con, "champion_previous")
    if row is None:
        raise RollbackError("there is no earlier champion to roll back to (the current one was the first); "
                            "`uniroute rollback ROUTER_ID` moves to any earlier or later champion")
    return row[0]


def rollback_champion(con: store.Connection, router_id: str | None, force: bool = False,
                      cache_dir: Path | None = None, min_answers: int = MIN_VAL_ANSWERS,
                      gate: GateThresholds = GateThresholds()) -> RollbackResult:
    """Make an earlier champion the champion again (the previous one when router_id is None).

    Refused in one line for an unknown version or one that was never the champion. A version that does not route
    a model the current champion routes (one added since) is refused unless force: rolling back would take that
    model's traffic away. Forced, the model is onboarded onto the version rolled back to, from its validation
    results, as any newcomer is (a child version on the old clusters: no retraining), so every active model stays
    routed and the rollback undoes the router, not the pool.
    """
    current = registry.champion_id(con)
    if current is None:
        raise RollbackError("there is no champion yet; run `uniroute build` first")
    target = rollback_target(con, router_id)
    if store.query_row(con, "champion_was", router_id=target) is None:
        if store.query(con, "router_by_id", router_id=target).empty:
            raise RollbackError(f"no router version {target!r} in the store (the champions so far: `uniroute sql "
                                '"select * from champion_history"`)')
        raise RollbackError(f"{target} was never the champion (a challenger or a candidate kind); rollback goes "
                            "back to an earlier champion only")
    if target == current:
        return RollbackResult(target, current, moved=False)
    version = registry.load_router_version(con, target)
    active = set(store.query(con, "active_models").model)
    routed_now = registry.load_router_version(con, current).router.models
    missing = tuple(m for m in routed_now if m in active and m not in set(version.router.models))
    if missing and not force:
        raise RollbackError(f"{target} does not route {', '.join(missing)}, added since; rolling back would take "
                            "their traffic away: --force rolls back and onboards them onto it again")
    store.execute(con, "champion_move_record", router_id=target, from_router_id=current, forced=bool(missing),
                  missing=list(missing), moved_at=datetime.now(UTC).replace(tzinfo=None))
    log.info("rolled back the champion from %s to %s", current, target)
    onboarded = None
    if missing:
        onboarded = onboard_models(con, missing, cache_dir=cache_dir, min_answers=min_answers, gate=gate).router_id
    return RollbackResult(target, current, moved=True, missing=missing, onboarded_router_id=onboarded)
