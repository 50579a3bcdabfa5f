"""Retiring a model: it leaves the pool at once, as a new router version (never an edit in place).

In the caller's session: the model's status becomes 'retired' (its results stay; onboarding it again brings it
back) and, when the champion routes it, a child version without it becomes the champion. The caller publishes
in the same session when anything was published before, so the published tables lose the model at once too,
and reconciliation moves MLflow's champion alias to the new version.
"""

from __future__ import annotations

import difflib
import logging
from dataclasses import dataclass
from datetime import UTC, datetime

from uniroute import store
from uniroute.errors import UnirouteError
from uniroute.pipeline.pool import registry

log = logging.getLogger(__name__)


class RetireError(UnirouteError, ValueError):
    """A model that cannot be retired; the message says why."""


@dataclass(frozen=True)
class RetireResult:
    """What retiring a model changed."""

    model: str
    router_id: str | None  # the new champion without the model, or None when the champion did not route it
    parent_id: str | None
    was_active: bool

    def as_dict(self) -> dict:
        return dict(self.__dict__)

    def line(self) -> str:
        if self.router_id is not None:
            return f"retired {self.model}: router {self.router_id} (parent {self.parent_id}) routes without it"
        state = "retired" if self.was_active else "was already retired"
        return f"{self.model} {state}; no router routes it"


def retire_model(con: store.Connection, model: str) -> RetireResult:
    """Take a model out of the pool: status 'retired' and, if the champion routes it, a champion without it."""
    known = store.query(con, "model_status", models=[model])
    if known.empty:
        names = store.query(con, "ingest_model_names").model.tolist()
        close = difflib.get_close_matches(model, names, n=3)
        hint = f"; did you mean {close}?" if close else ""
        raise RetireError(f"no model {model!r} in the store{hint}")
    was_active = known.status.iloc[0] == "active"
    store.execute(con, "retire_model", model=model)
    try:
        champion = registry.load_champion(con)
    except LookupError:
        return RetireResult(model, None, None, was_active)
    if model not in champion.router.models:
        return RetireResult(model, None, None, was_active)
    if len(champion.router.models) == 1:
        raise RetireError(f"{model!r} is the only model router {champion.router_id} routes; onboard another model "
                          "before retiring it")
    router = champion.router.without_model(model)
    router_id = registry.new_router_id(champion.kind)
    registry.save_router_version(con, registry.NewVersion(  # the champion's clustering is stored already
        router, router_id, champion.clustering_id, kind=champion.kind, data_fingerprint=registry.data_fingerprint(con),
        val_area=champion.val_area, promoted=True,
        reason=f"retired {model} from {champion.router_id} at {datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ}",
        parent_id=champion.router_id, origin="retire", price_snapshot=champion.price_snapshot,  # costs unchanged
    ))
    log.info("retired %s: router %s without it", model, router_id)
    return RetireResult(model, router_id, champion.router_id, was_active)
