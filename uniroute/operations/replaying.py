"""Replay as an operation: re-route logged decisions with a stored router version (pipeline/replay.py), in one
recorded session that keeps the replay's inputs and results in the `replays` table."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from uniroute.ingest.prices import prices_from_file
from uniroute.operations.context import Context
from uniroute.pipeline.replay import (
    ReplayError,
    ReplaySetting,
    ReplayWindow,
    record_replay,
    replay_line,
    replay_router,
)
from uniroute.pipeline.replay import replay as replay_traffic
from uniroute.pipeline.replay_estimates import markdown


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


def per_call_prices(path: Path) -> dict[str, float]:
    """{model: cost per call} of a prices file (the newest price per model); ReplayError for a token price, which
    cannot price a logged decision (records carry no token counts)."""
    newest: dict[str, tuple] = {}
    for price in prices_from_file(path):
        if price.per_call is None:
            raise ReplayError(f"{path}: {price.line()} is a token price; a replay needs a per-call price "
                              "(column per_call) for each model it reprices")
        if price.model not in newest or price.valid_from >= newest[price.model][0]:
            newest[price.model] = (price.valid_from, price.per_call)
    return {m: float(v[1]) for m, v in newest.items()}


def replay(ctx: Context, window: ReplayWindow, router: str = "champion", without: Sequence[str] = (),
           with_models: Sequence[str] = (), prices: Path | None = None,
           setting: ReplaySetting = ReplaySetting()) -> Replayed:
    """Re-route the window's logged decisions with `router` ("champion", "challenger" or a router id), repriced by
    a prices file, its pool edited, at a setting; ReplayError in one line for anything off, before the store opens
    where it can."""
    per_call = per_call_prices(prices) if prices is not None else {}
    inputs = {"last": window.last, "since": window.since, "router": router, "without": list(without),
              "with": list(with_models), "prices": None if prices is None else str(prices), "lambda": setting.lam,
              "budget": setting.budget, "max_cost": setting.max_cost}
    with ctx.session("replay", inputs=f"{router} {window.line()}") as s:
        using = replay_router(s.con, router, without, with_models, per_call)
        result, _ = replay_traffic(s.con, using, window, setting, inputs=inputs)
        replay_id = record_replay(s.con, result)
        done = Replayed(result, replay_id)
        s.detail = done.line()
    return done
