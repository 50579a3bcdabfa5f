"""Routing new prompts: the champion router from the store, or the published snapshot while the store is busy.

`routing_source` reads the champion and the active pool from the store through a read-only connection. When a
writer (a build, an ingest, an onboarding) holds the store, it answers from the published `current` snapshot
instead, which carries the router, its pool and a fitted embedder if any, and says so: which version answered
and which operation holds the store. Routing itself is a pure function of the router.
"""

from __future__ import annotations

import csv
import uuid
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from uniroute import embed
from uniroute.embed import text_hash
from uniroute.errors import UnirouteError
from uniroute.pipeline.serving.calibration import Calibration
from uniroute.pipeline.serving.decided import DecidedColumns
from uniroute.pipeline.serving.default_memo import remembered_default
from uniroute.pipeline.serving.latency import check_max_latency, latency_cut, too_slow_line
from uniroute.pipeline.serving.records import Recording, explored, new_decision_ids
from uniroute.routers.budgets.cost_cap import CostCapError, check_max_cost, check_reachable, lambda_for_max_cost
from uniroute.routers.rule import check_budget, check_lambda
from uniroute.routers.serialize import AnyRouter
from uniroute.routers.tables import DEFAULT_GAIN_KEPT, default_budget

if TYPE_CHECKING:  # the store, the registry, the snapshot reader and pandas are imported where used: a one-prompt
    # `uniroute route` from the compact publication (serving/quick_route.py) decides without any of them
    import pandas as pd

    from uniroute import store


class RoutingError(UnirouteError, ValueError):
    """A routing request that cannot be answered as asked."""


@dataclass(frozen=True)
class RoutingSource:
    """The router that answers, the pool it may choose from, and where it came from."""

    router: AnyRouter
    router_id: str
    pool: tuple[str, ...]  # active models the router routes
    retired: frozenset[str]  # models taken out of the pool (refused by name)
    embedder_state: bytes | None  # the stored embedder (embed.portable), or None when it is built by name
    source: str  # one line: the store's champion, or the published version answering while the store is busy
    publication_version: str | None = None  # the publication of this router answering (decision records say it)
    price_snapshot: str | None = None  # which prices the router's costs came from (registry.price_snapshot)
    restored: Any = None  # the router's embedder, restored from its model file in the cache (embed.restored_embedder)

    def embedder(self, cache_dir: Path | None = None) -> Any:
        """The router's embedder: restored from its state, or built by name (into cache_dir where needed)."""
        if self.restored is not None:
            return self.restored
        if self.embedder_state is not None:
            return embed.embedder_from_state(self.embedder_state, cache_dir)
        from uniroute.pipeline.pool import registry

        return embed.make_embedder(registry.embedder_name(self.router.embedder_id), progress=False,
                                   cache_dir=cache_dir)


def _from_store(con: store.Connection, router_id: str | None = None, cache_dir: Path | None = None) -> RoutingSource:
    # The embedder's state (tens of megabytes for a model file) is fetched only when its file was never restored
    # into cache_dir: reading it was most of a one-prompt `uniroute route`.
    from uniroute import store
    from uniroute.pipeline.pool import registry

    if router_id is None:
        version, what = registry.load_champion(con, embedder=False), "champion router"
    else:
        try:
            version, what = registry.load_router_version(con, router_id, embedder=False), "router"
        except LookupError as exc:
            raise RoutingError(f"{exc}: `uniroute sql \"select router_id, created_at from routers\"` lists them") \
                from None
    active = set(store.query(con, "active_models").model)
    retired = frozenset(store.query(con, "retired_models").model)
    pool = tuple(m for m in version.router.models if m in active)
    latest = store.query(con, "latest_publication")
    published = (str(latest.version.iloc[0]) if len(latest) and latest.router_id.iloc[0] == version.router_id
                 else None)
    embedder_id = version.router.embedder_id
    restored = embed.restored_embedder(embedder_id, cache_dir)
    state = None if restored is not None else registry.stored_embedder_state(con, embedder_id)
    return RoutingSource(version.router, version.router_id, pool, retired, state,
                         f"{what} {version.router_id}", published, version.price_snapshot, restored)


def _from_snapshot(published_dir: Path, why: str) -> RoutingSource:
    from uniroute.pipeline.serving import snapshot

    try:
        snap = snapshot.read_current(published_dir)
    except snapshot.PublishError as exc:
        raise RoutingError(f"{why}, and nothing is published to answer from ({exc})") from exc
    router = snap.router()
    pool = tuple(snap.manifest["pool"])
    retired = frozenset(m for m in router.models if m not in pool)
    return RoutingSource(router, snap.manifest["router_id"], pool, retired, snap.embedder_state(),
                         f"published snapshot {snap.version} (router {snap.manifest['router_id']}): {why}",
                         str(snap.version), snap.manifest.get("price_snapshot"))


def published_source(published_dir: Path) -> RoutingSource:
    """The published `current` snapshot's router, whatever holds the store (what a long-running server serves: it
    never takes the store's file lock, so builds never wait for it)."""
    return _from_snapshot(published_dir, "served from the published snapshot")


def routing_source(db_path: Path, published_dir: Path, router_id: str | None = None,
                   cache_dir: Path | None = None) -> RoutingSource:
    """The champion (or the stored version router_id) from the store, or, while a writer holds the store, the
    published `current` snapshot (which carries the champion only: a named version waits for the store). An
    embedder restored into cache_dir before is taken from there."""
    from uniroute import store

    try:
        con = store.open_read_only(db_path)
    except store.StoreLocked:
        holder = store.current_holder(db_path)
        who = holder.line() if holder is not None else "another process"
        if router_id is not None:
            raise RoutingError(f"router {router_id} is read from the store, which {who} holds now: try again when it "
                               "finishes (the published snapshot carries the champion only)") from None
        return _from_snapshot(published_dir, f"the store is held by {who}")
    try:
        return _from_store(con, router_id, cache_dir)
    finally:
        con.close()


@dataclass(frozen=True)
class RoutingRequest:
    """How to route, checked once at the boundary with the same rules and messages on every surface (`uniroute
    route`, `route --file`, the MLflow pyfunc, the Python API, the gateway): a lambda, a budget or a max cost, one
    of them; the pool named; a latency cap, alone or beside any of them."""

    lam: float | None = None  # None: 0 (quality only), unless a budget sets it
    budget: float | None = None  # (0, 1]: target mean cost as a fraction of the priciest pool model's
    pool: tuple[str, ...] | None = None  # None: the router's active pool
    max_cost: float | None = None  # >= 0: a hard cap on the expected mean cost per prompt, in the data's cost unit
    max_latency: float | None = None  # > 0 seconds: models whose recorded median latency is above it are left out

    def __post_init__(self) -> None:
        if self.lam is not None and self.budget is not None:
            raise RoutingError("give a lambda or a budget, not both")
        if self.max_cost is not None and (self.lam is not None or self.budget is not None):
            raise RoutingError(f"give a max cost or a {'lambda' if self.lam is not None else 'budget'}, not both")
        try:
            lam = None if self.lam is None else check_lambda(self.lam)
            budget = None if self.budget is None else check_budget(self.budget)
            max_cost = None if self.max_cost is None else check_max_cost(self.max_cost)
            max_latency = None if self.max_latency is None else check_max_latency(self.max_latency)
        except (TypeError, ValueError) as exc:
            raise RoutingError(str(exc)) from None
        pool = None
        if self.pool is not None:
            if isinstance(self.pool, str) or not all(isinstance(p, str) for p in self.pool):
                raise RoutingError(f"the pool must be model names, not {self.pool!r}")
            pool = tuple(dict.fromkeys(p.strip() for p in self.pool if p.strip()))
            if not pool:
                raise RoutingError("the pool is empty: name at least one model")
        # Frozen: the checked values replace what was given (floats, names stripped and deduplicated).
        object.__setattr__(self, "lam", lam)
        object.__setattr__(self, "budget", budget)
        object.__setattr__(self, "pool", pool)
        object.__setattr__(self, "max_cost", max_cost)
        object.__setattr__(self, "max_latency", max_latency)

    def pool_of(self, router_id: str, active: Sequence[str], retired: Collection[str] = ()) -> tuple[str, ...]:
        """The models to choose among: the named pool checked against the router's active pool, else all of it."""
        if not active:
            raise RoutingError(f"router {router_id} has no active model: onboard one first")
        if self.pool is None:
            return tuple(active)
        gone = [m for m in self.pool if m in retired]
        if gone:
            raise RoutingError(f"models {gone} are retired and out of the pool (`uniroute onboard --reactivate` brings "
                               "them back)")
        unknown = [m for m in self.pool if m not in active]
        if unknown:
            raise RoutingError(f"models {unknown} are not in the pool of router {router_id} "
                               f"(pool: {', '.join(active)})")
        return self.pool


def pool_names(text: str) -> list[str]:
    """The model names of a pool given as text: comma-separated, CSV quoting for a name with a comma or quote."""
    return next(csv.reader([text], skipinitialspace=True), [])


def checked_prompts(texts: Sequence[Any]) -> list[str]:
    """The prompts of a request; RoutingError when there is none, or one is not text or blank."""
    texts = list(texts)
    if not texts:
        raise RoutingError("no prompt given")
    for i, text in enumerate(texts, start=1):
        if not isinstance(text, str) or not text.strip():
            raise RoutingError(f"prompt {i} is empty: give the text to route")
    return texts


def checked_request(source: RoutingSource, texts: Sequence[str], lam: float | None, budget: float | None,
                    pool: Sequence[str] | None, max_cost: float | None = None, max_latency: float | None = None,
                    latency: Mapping[str, float] | None = None) -> tuple[list[str], tuple[str, ...]]:
    """The prompts and the pool of a request, checked; RoutingError in one line for anything off (a max cost
    below the cheapest pool model's cost too: nothing routes within it). Under a max latency the pool loses the
    models whose recorded latency (model -> seconds) is above it; RoutingError when that leaves none."""
    texts = checked_prompts(texts)
    request = RoutingRequest(lam, budget, None if pool is None else tuple(pool), max_cost, max_latency)
    chosen = request.pool_of(source.router_id, source.pool, source.retired)
    if request.max_latency is not None:
        cut = latency_cut(chosen, request.max_latency, latency or {})
        if not cut.kept:
            raise RoutingError(too_slow_line(request.max_latency, cut, latency or {}))
        chosen = cut.kept
    if request.max_cost is not None:
        index = source.router.pool_indices(chosen)
        try:
            check_reachable(request.max_cost, [source.router.models[i] for i in index], source.router.costs[index])
        except CostCapError as exc:
            raise RoutingError(str(exc)) from None
    return texts, chosen


DEFAULT_SETTING = "default budget"
MAX_COST_SETTING = "max cost"
# Columns of every routed decisions frame beside the choice, read by name by the decision records.
DECISION_EXTRAS = ("fallbacks", "expected_score", "expected_cost", "price_snapshot")


def resolved_setting(router: AnyRouter, pool: Sequence[str], lam: float | None,
                     budget: float | None) -> tuple[float | None, float | None, str]:
    """(lambda, budget, which setting): a request naming neither routes at the default budget, the cheapest
    published setting that keeps DEFAULT_GAIN_KEPT of the gain from the cheapest routing's expected score to the
    best, at that budget's published lambda (routers.tables); lambda 0 would send nearly every prompt to the
    priciest model for the last points of quality. Only a named budget still needs its lambda."""
    if lam is None and budget is None:
        budget, lam, _, _ = default_budget(router, tuple(pool))
        return lam, budget, DEFAULT_SETTING
    return lam, budget, "lambda" if lam is not None else "budget"


def default_setting_line(budget: float) -> str:
    """What a user is told when the default setting answered."""
    return (f"routed at the default budget {budget:.3g}: the cheapest setting that keeps {DEFAULT_GAIN_KEPT:.0%} of "
            "the gain from the cheapest routing's expected score to the best (choose with --budget or --lambda)")


# A setting as routed and recorded: (lambda, budget, which setting, max cost).
ResolvedSetting = tuple[float, float | None, str, float | None]


@dataclass(frozen=True, eq=False)
class RoutedBatch:
    """A routed batch: the decisions (one row per prompt, each with its decision_id), the prompts' embeddings
    (what a decision record keeps for replay), and per prompt the probability of the logged choice and whether
    exploration drew it (all 1 and False unless exploration is on)."""

    decisions: pd.DataFrame
    X: np.ndarray
    propensity: np.ndarray
    explored: np.ndarray
    embedder_id: str
    latency_note: str | None = None  # what a latency cap left out, and kept with no recorded latency


def decided_columns(
    source: RoutingSource,
    texts: Sequence[str],
    lam: float | None = None,
    budget: float | None = None,
    pool: Sequence[str] | None = None,
    embedder: Any = None,
    cache_dir: Path | None = None,
    recording: Recording | None = None,
    explain: bool = False,
    max_cost: float | None = None,
    calibration: Calibration | None = None,
    max_latency: float | None = None,
    resolved: ResolvedSetting | None = None,
) -> DecidedColumns:
    """The decisions of route_batch as columns (DecidedColumns), no frame made; route_batch says what they are."""
    calibration = calibration or Calibration()
    asked = pool
    texts, pool = checked_request(source, texts, lam, budget, pool, max_cost, max_latency, calibration.latency)
    router = source.router
    embedder = embedder or source.embedder(cache_dir)
    router.check_embedder(embedder.embedder_id)
    X = embedder.encode(texts)
    if resolved is not None:
        lam, budget, setting, max_cost = resolved
    elif lam is None and budget is None and max_cost is None and cache_dir is not None:
        budget, lam = remembered_default(cache_dir, source.router_id, router, pool)  # what resolved_setting gives
        setting = DEFAULT_SETTING
    else:
        lam, budget, setting = calibrated_lambda(router, pool, lam, budget, max_cost, calibration)
    # The decision is rank 1 of the terms an explanation prints, never a separate computation; exploration (off
    # by default) may then serve a near-best model instead, and the row then carries that model's expectations.
    terms = router.route_terms(X, lam, pool)
    served, propensity, explore = explored(router, X, lam, pool, terms.chosen(), recording or Recording())
    decided = terms.summary_columns(served)
    n = len(texts)
    # The per-batch values as lists of n: pandas broadcasting a scalar costs more than the list on the one-prompt
    # batches of a server, and the columns come out the same.
    columns: dict[str, Any] = {
        "decision_id": new_decision_ids(n),
        "prompt_index": np.arange(n, dtype=np.int32),
        "text_hash": [text_hash(t) for t in texts],
        # (n,) ints, or None for a kind without clusters; a one-hot router's terms assigned them already
        "cluster": terms.clusters if terms.clusters is not None else router.prompt_clusters(X),
        "model": decided["model"],
        "fallbacks": decided["fallbacks"],
        "expected_score": decided["expected_score"],
        "expected_cost": decided["expected_cost"],
        "lam": [lam] * n,
        "budget": [budget] * n,
        "setting": [setting] * n,
        "max_cost": [max_cost] * n,
        "max_latency": [max_latency] * n,
        "router_id": [source.router_id] * n,
        "price_snapshot": [source.price_snapshot] * n,
    }
    if explain:
        columns["explain"] = terms.explained(calibration.latency)
    note = None
    if max_latency is not None:
        asked = RoutingRequest(pool=None if asked is None else tuple(asked)).pool_of(source.router_id, source.pool,
                                                                                   source.retired)
        note = latency_cut(asked, max_latency, calibration.latency).line(max_latency, calibration.latency)
    return DecidedColumns(columns, X, propensity, explore, embedder.embedder_id, note)


def route_batch(
    source: RoutingSource,
    texts: Sequence[str],
    lam: float | None = None,
    budget: float | None = None,
    pool: Sequence[str] | None = None,
    embedder: Any = None,
    cache_dir: Path | None = None,
    recording: Recording | None = None,
    explain: bool = False,
    max_cost: float | None = None,
    calibration: Calibration | None = None,
    max_latency: float | None = None,
    resolved: ResolvedSetting | None = None,
) -> RoutedBatch:
    """Route texts (lambda, or the lambda that meets a budget): per prompt its decision_id, the chosen model, its
    ranked fall-backs, expected score and cost, and its cluster; with exploration on in `recording`, a share of
    prompts goes to a near-best model drawn at random, its probability kept; with explain, an `explain` column of
    the argmin's terms per candidate (routers.explain). A budget or a max cost is turned into lambda on the
    calibration's prompt mix (recent traffic or the validation prompts; None: the validation prompts); a setting
    `resolved` before (a server resolves each setting once per router) is routed at and recorded as it is. A max
    latency leaves out the models whose latency recorded in the calibration's window is above it, from the choice
    and the fall-backs (`latency_note` says which, and which were kept with none recorded)."""
    decided = decided_columns(source, texts, lam, budget, pool, embedder, cache_dir, recording, explain, max_cost,
                              calibration, max_latency, resolved)
    return RoutedBatch(decided.frame(), decided.X, decided.propensity, decided.explored, decided.embedder_id,
                       decided.latency_note)


def calibrated_lambda(router: AnyRouter, pool: Sequence[str], lam: float | None, budget: float | None,
                      max_cost: float | None, calibration: Calibration) -> tuple[float, float | None, str]:
    """(lambda, budget, which setting) of a checked request: a max cost or a budget turned into lambda on the
    calibration's mix, the default budget's published lambda when none is named."""
    if max_cost is not None:
        try:
            return lambda_for_max_cost(router, calibration.prompts(router), max_cost, pool), None, MAX_COST_SETTING
        except ValueError as exc:
            raise RoutingError(str(exc)) from None
    lam, budget, setting = resolved_setting(router, pool, lam, budget)
    if setting == "budget":
        try:
            lam = router.lambda_for_budget(calibration.prompts(router), budget, pool)  # type: ignore[arg-type]  # set
        except ValueError as exc:
            raise RoutingError(str(exc)) from exc
    return (0.0 if lam is None else float(lam)), budget, setting


def route_texts(
    source: RoutingSource,
    texts: Sequence[str],
    lam: float | None = None,
    budget: float | None = None,
    pool: Sequence[str] | None = None,
    embedder: Any = None,
    cache_dir: Path | None = None,
    explain: bool = False,
    max_cost: float | None = None,
    calibration: Calibration | None = None,
    max_latency: float | None = None,
) -> pd.DataFrame:
    """The decisions of route_batch, nothing recorded: one row per prompt (see route_batch)."""
    return route_batch(source, texts, lam, budget, pool, embedder, cache_dir, explain=explain, max_cost=max_cost,
                       calibration=calibration, max_latency=max_latency).decisions


def log_decisions(con: store.Connection, decisions: pd.DataFrame) -> str:
    """Append a batch of decisions to routing_log (in the caller's session); the batch id."""
    from uniroute import store

    batch_id = uuid.uuid4().hex
    # routing_log keeps lambda and budget; which setting chose them (`setting`), the fall-backs, the expectations
    # and an explanation are said to the user, not stored here (decision records keep them).
    rows = decisions.drop(columns=["setting", "decision_id", "max_cost", "max_latency", *DECISION_EXTRAS, "explain"],
                          errors="ignore")
    store.write_frame(con, "routing_log", rows.assign(batch_id=batch_id,
                                                      routed_at=datetime.now(UTC).replace(tzinfo=None)))
    return batch_id
