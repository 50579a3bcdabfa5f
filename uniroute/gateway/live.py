"""The router the gateway serves, kept live: the published `current` snapshot's router, loaded once per router
version (with its embedder, its calibration and the prices in force) and swapped when `current` moves, checked at
most once a second by a background thread, so a build, an onboarding or a rollback reaches requests within
seconds and a request in flight finishes on the router it started with.

Also what a request's `model` field asks for (`uniroute`, `uniroute/budget-0.3`, `uniroute/max-cost-0.002`,
`uniroute/lambda-0.5`, or a pool model's own name), the cap a named budget or max cost puts on fall-backs, the real
cost of a call at the price in force, and the conversations pinned to the model that answered their first turn.
"""

from __future__ import annotations

import logging
import math
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from uniroute import store
from uniroute.ingest.prices import Price
from uniroute.pipeline.serving import snapshot
from uniroute.pipeline.serving.calibration import Calibration, TrafficWindow, calibration_at
from uniroute.pipeline.serving.decided import DecidedColumns
from uniroute.pipeline.serving.route import (
    ResolvedSetting,
    RoutingError,
    RoutingRequest,
    RoutingSource,
    decided_columns,
    published_source,
)

log = logging.getLogger(__name__)

ROUTED = "uniroute"  # the model name that asks the router to choose
_PART = re.compile(r"^(budget|max-cost|lambda|max-latency)-([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)$")
_FIELDS = {"budget": "budget", "max-cost": "max_cost", "lambda": "lam", "max-latency": "max_latency"}
FIXED_SETTING = "fixed by caller"  # the setting of a request that named a pool model itself: the router chose nothing
CHECK_SECONDS = 1.0  # how often the `current` pointer is looked at
MAX_CONVERSATIONS = 100_000  # conversations remembered (oldest forgotten first)
# A decision whose CPU time stays under this runs on the event loop: handing it to a worker thread and back costs
# about as much CPU as a decision of a light embedder (a rule, static vectors, TF-IDF), and the thread then fights
# the event loop for the interpreter lock. A heavier embedder's decisions (a transformer: tens of milliseconds)
# keep going to a thread, so the loop never stalls on them.
INLINE_DECISION_SECONDS = 0.002
_SMOOTHING = 0.2  # weight of the newest decision in the moving average of a router version's decision time


def requested_setting(model: str) -> RoutingRequest | None:
    """The routing request a `model` field names: the default setting for `uniroute`, a budget, a max cost, a
    lambda or a max latency for `uniroute/<setting>-<value>`, a max latency beside one of the others as
    `uniroute/<setting>-<value>/max-latency-<seconds>`; None for any other name (a pool model asked for directly).
    RoutingError for a `uniroute/...` name that is not one of those forms (or gives a setting twice)."""
    if model == ROUTED:
        return RoutingRequest()
    if not model.startswith(ROUTED + "/"):
        return None
    given: dict[str, float] = {}
    for part in model[len(ROUTED) + 1:].split("/"):
        found = _PART.match(part)
        if found is None or _FIELDS[found.group(1)] in given:
            raise RoutingError(f"model {model!r}: ask for `uniroute`, `uniroute/budget-B`, `uniroute/max-cost-C`, "
                               "`uniroute/lambda-L` or `uniroute/max-latency-S`, optionally followed by "
                               "`/max-latency-S` (or a pool model by name)")
        given[_FIELDS[found.group(1)]] = float(found.group(2))
    return RoutingRequest(lam=given.get("lam"), budget=given.get("budget"), max_cost=given.get("max_cost"),
                          max_latency=given.get("max_latency"))


@dataclass(frozen=True, eq=False)
class Loaded:
    """One router version as served: its source, embedder, calibration, the prices in force when it loaded."""

    source: RoutingSource
    embedder: Any
    calibration: Calibration
    prices: dict[str, Price] = field(default_factory=dict)
    version: str | None = None  # the publication `current` pointed at
    # Each setting asked for, as (lambda, budget, setting, max cost): filled by the first request of the setting.
    resolved: dict[RoutingRequest, ResolvedSetting] = field(default_factory=dict)
    # CPU seconds of one decision at a resolved setting, a moving average (inf until one was measured).
    decision_seconds: list[float] = field(default_factory=lambda: [math.inf])

    def decides_inline(self, request: RoutingRequest) -> bool:
        """Whether a request's decision is cheap enough to run on the event loop: its setting resolved already (a
        first request calibrates a lambda: tens of milliseconds) and this router's decisions measured light."""
        return request in self.resolved and self.decision_seconds[0] < INLINE_DECISION_SECONDS

    def timed_decide(self, text: str, request: RoutingRequest) -> DecidedColumns:
        """decide(), its CPU time (this thread's, so other threads' load does not inflate it) kept in the moving
        average when the setting was resolved already."""
        resolved = request in self.resolved
        started = time.thread_time()
        decided = self.decide(text, request)
        if resolved:
            spent, average = time.thread_time() - started, self.decision_seconds[0]
            self.decision_seconds[0] = spent if average == math.inf else average + _SMOOTHING * (spent - average)
        return decided

    def model_cost(self, model: str) -> float | None:
        """The router's expected per-call cost of a model (the unit budgets and max costs are in)."""
        models = self.source.router.models
        return float(self.source.router.costs[models.index(model)]) if model in models else None

    def cap(self, request: RoutingRequest) -> float | None:
        """The per-call cost no fall-back may exceed: a named max cost, or a named budget's share of the priciest
        pool model's cost; None at the default setting or a lambda (no promise about spend was asked)."""
        if request.max_cost is not None:
            return request.max_cost
        if request.budget is not None:
            costs = [c for m in self.source.pool if (c := self.model_cost(m)) is not None]
            return request.budget * max(costs) if costs else None
        return None

    def too_slow(self, request: RoutingRequest, model: str) -> bool:
        """Whether a model's recorded latency is above the request's max latency (unknown latency never is)."""
        latency = self.calibration.latency.get(model)
        return request.max_latency is not None and latency is not None and latency > request.max_latency

    def decide(self, text: str, request: RoutingRequest) -> DecidedColumns:
        """The router's decision for one prompt (its ranked fall-backs included), nothing recorded: route_batch's
        decision as columns (route.decided_columns; a pandas frame per request, read back column by column, was
        most of uniroute's own CPU per request: decision 0102). A setting's lambda is found once per router version
        (the default budget, a budget or a max cost calibrated on the prompt mix: tens of milliseconds), then each
        request routes at it and says which setting it was."""
        resolved = self.resolved.get(request)
        if resolved is None:
            decided = decided_columns(self.source, [text], lam=request.lam, budget=request.budget,
                                      embedder=self.embedder, max_cost=request.max_cost,
                                      calibration=self.calibration, max_latency=request.max_latency)
            columns = decided.columns
            self.resolved[request] = (float(columns["lam"][0]), _float(columns["budget"][0]),
                                      str(columns["setting"][0]), _float(columns["max_cost"][0]))
            return decided
        return decided_columns(self.source, [text], embedder=self.embedder, resolved=resolved,
                               calibration=self.calibration, max_latency=request.max_latency)

    def fixed(self, text: str, model: str) -> DecidedColumns:
        """The record's decision for a prompt whose caller named the model: embedded and placed (cluster, drift) as
        a routed prompt is, the named model with no fall-backs, its setting FIXED_SETTING, so traffic views count
        it and replay can tell it from the router's own choices."""
        decided = self.timed_decide(text, RoutingRequest())
        return replace(decided, columns={**decided.columns, "model": [model], "setting": [FIXED_SETTING],
                                         "budget": [None], "fallbacks": [None], "expected_score": [None],
                                         "expected_cost": [self.model_cost(model)]})


def prices_in_force(db_path: Path, models: list[str]) -> dict[str, Price] | None:
    """The prices in force of the models, read through a read-only connection; None while a writer holds the store
    or when there is none (the caller keeps what it had)."""
    if not Path(db_path).exists():
        return None
    try:
        con = store.open_read_only(db_path)
    except (store.StoreLocked, store.StoreError, duckdb.Error):
        return None
    try:
        rows = store.query(con, "prices_for_models", models=models)
    except duckdb.Error:
        return None
    finally:
        con.close()
    return {str(r.model): Price(str(r.model), pd.Timestamp(r.valid_from).date(), _float(r.input_per_mtok),
                                _float(r.output_per_mtok), _float(r.per_call))
            for r in rows.itertuples(index=False)}


def _float(value: Any) -> float | None:
    return None if value is None or value != value else float(value)


class LiveRouter:
    """The published router, reloaded when `published/current` moves; `loaded` is what a request routes with."""

    def __init__(self, published_dir: Path, db_path: Path, embedder_of: Callable[[RoutingSource], Any] | None = None,
                 window: TrafficWindow = TrafficWindow(), check_seconds: float = CHECK_SECONDS) -> None:
        self.published_dir = Path(published_dir)
        self.db_path = Path(db_path)
        self._embedder_of = embedder_of or (lambda source: source.embedder())
        self._embedders: dict[str, Any] = {}  # by embedder id: a new router on the same embedder reuses it
        self._window = window
        self._check_seconds = check_seconds
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.on_switch: Callable[[Loaded], None] | None = None  # told after each switch to a new router version
        self.loaded: Loaded = self._load(snapshot.current_version(self.published_dir))

    def _load(self, version: str | None) -> Loaded:
        source = published_source(self.published_dir)
        embedder_id = source.router.embedder_id
        if embedder_id not in self._embedders:
            self._embedders[embedder_id] = self._embedder_of(source)
        calibration = calibration_at(self.db_path, embedder_id, self._window)
        prices = prices_in_force(self.db_path, list(source.pool))
        if prices is None:  # the store is busy: keep the prices known, the record's cost stays null for the rest
            prices = dict(self.loaded.prices) if hasattr(self, "loaded") else {}
        log.info("gateway: serving router %s (%s)", source.router_id, source.source)
        return Loaded(source, self._embedders[embedder_id], calibration, prices, version)

    def refresh(self) -> bool:
        """Load the router `current` points at if it moved; whether it did. A failed load keeps the old one."""
        version = snapshot.current_version(self.published_dir)
        if version is None or version == self.loaded.version:
            return False
        try:
            self.loaded = self._load(version)  # one assignment: a request sees the old router or the new one
        except (RoutingError, snapshot.PublishError, OSError) as exc:
            log.warning("gateway: keeping router %s: cannot load publication %s (%s)", self.loaded.source.router_id,
                        version, exc)
            return False
        if self.on_switch is not None:
            self.on_switch(self.loaded)
        return True

    def start(self) -> None:
        """Check `current` every check_seconds in a daemon thread until stop()."""
        def watch() -> None:
            while not self._stop.wait(self._check_seconds):
                self.refresh()
        self._thread = threading.Thread(target=watch, name="uniroute-gateway-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)


class Conversations:
    """Which model answered each conversation's first turn (bounded, oldest forgotten first); thread-safe."""

    def __init__(self, limit: int = MAX_CONVERSATIONS) -> None:
        self._models: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()
        self._limit = limit

    def model_of(self, key: str | None) -> str | None:
        if key is None:
            return None
        with self._lock:
            return self._models.get(key)

    def remember(self, key: str | None, model: str) -> None:
        """Pin a conversation to the model that answered (kept if already pinned to it)."""
        if key is None:
            return
        with self._lock:
            self._models[key] = model
            self._models.move_to_end(key)
            while len(self._models) > self._limit:
                self._models.popitem(last=False)
