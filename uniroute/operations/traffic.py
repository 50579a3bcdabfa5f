"""Traffic operations: replay logged decisions with a stored router version (pipeline/traffic/replay.py), in one
recorded session that keeps the replay's inputs and results in the `replays` table; drift (the read side): the
champion's recent traffic against its training prompts, read through a read-only connection so a scheduled check
never waits for a writer (it skips, saying so, while one holds the store). The flow that calls it emits the event,
then records it (drift_announced: one write, so the next checks of the same champion on the same training data do
not emit it again); the library computes (pipeline/traffic/drift.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from uniroute import store
from uniroute.ingest.prices import prices_from_file
from uniroute.operations.context import Context
from uniroute.pipeline.traffic.drift import DriftCheck, DriftThresholds, check_drift, record_announcement
from uniroute.pipeline.traffic.replay import (
    ReplayError,
    ReplaySetting,
    ReplayWindow,
    record_replay,
    replay_line,
    replay_router,
)
from uniroute.pipeline.traffic.replay import replay as replay_traffic
from uniroute.pipeline.traffic.replay_estimates import markdown
from uniroute.pipeline.traffic.replay_prices import PriceSchedule
from uniroute.settings import Settings
from uniroute.store.embeddings import expose_view


@dataclass(frozen=True, eq=False)
class Replayed:
    """A replay's result document (replay_estimates), its id in `replays` and its one line."""

    result: dict
    replay_id: str

    def line(self) -> str:
        return replay_line(self.result)

    def markdown(self) -> str:
        return markdown(self.result)

    def as_dict(self) -> dict:
        return {"replay_id": self.replay_id, **self.result}


def per_call_prices(path: Path) -> PriceSchedule:
    """The per-call prices of a prices file, each from its day (a decision is replayed at the prices in force when
    it was decided); ReplayError for a token price, which cannot price a logged decision (records carry no token
    counts)."""
    prices = []
    for price in prices_from_file(path):
        if price.per_call is None:
            raise ReplayError(f"{path}: {price.line()} is a token price; a replay needs a per-call price "
                              "(column per_call) for each model it reprices")
        prices.append((price.valid_from, price.model, float(price.per_call)))
    return PriceSchedule(tuple(prices))


def replay(ctx: Context, window: ReplayWindow, router: str = "champion", without: Sequence[str] = (),
           with_models: Sequence[str] = (), prices: Path | None = None,
           setting: ReplaySetting = ReplaySetting()) -> Replayed:
    """Re-route the window's logged decisions with `router` ("champion", "challenger" or a router id), repriced by
    a prices file, its pool edited, at a setting; ReplayError in one line for anything off, before the store opens
    where it can."""
    schedule = per_call_prices(prices) if prices is not None else PriceSchedule()
    inputs = {"last": window.last, "since": window.since, "router": router, "without": list(without),
              "with": list(with_models), "prices": None if prices is None else str(prices), "lambda": setting.lam,
              "budget": setting.budget, "max_cost": setting.max_cost}
    with ctx.session("replay", inputs=f"{router} {window.line()}") as s:
        using = replay_router(s.con, router, without, with_models, schedule)
        result, _ = replay_traffic(s.con, using, window, setting, inputs=inputs)
        replay_id = record_replay(s.con, result)
        done = Replayed(result, replay_id)
        s.detail = done.line()
    return done


def drift_thresholds(settings: Settings) -> DriftThresholds:
    """The drift_* settings as thresholds."""
    return DriftThresholds(settings.drift_days, settings.drift_min_decisions, settings.drift_mix_threshold,
                           settings.drift_far_threshold)


def drift(ctx: Context, thresholds: DriftThresholds) -> DriftCheck:
    """Has the champion's traffic drifted from its training prompts? (No check before a store or while a writer
    holds it: the next scheduled run checks.)"""
    if not ctx.db_path.exists():
        return DriftCheck(False, None, 0, None, None, f"no drift check: no store at {ctx.db_path}")
    try:
        # Access stays on: the training prompts' vectors are read from the embeddings dataset's files.
        con = store.open_read_only(ctx.db_path, access_off=False)
    except store.StoreLocked:
        holder = store.current_holder(ctx.db_path)
        who = holder.line() if holder is not None else "another process"
        return DriftCheck(False, None, 0, None, None, f"no drift check: the store is held by {who}")
    try:
        expose_view(con)
        return check_drift(con, thresholds)
    finally:
        con.close()


def drift_announced(ctx: Context, check: DriftCheck) -> bool:
    """Record that the flow emitted the drift event for check's champion on its training data, so later checks of
    the same champion and data do not emit it again; False when nothing was recorded (already announced)."""
    with ctx.session("drift", inputs=check.router_id or "") as s:
        recorded = record_announcement(s.con, check)
        s.detail = (f"drift announced for champion {check.router_id}" if recorded
                    else f"drift already announced for champion {check.router_id}")
    return recorded
