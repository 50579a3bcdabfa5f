"""Replay: re-route logged decisions with any stored router version, at other prices, with models added or removed,
at a lambda or a budget, and say what the traffic would have cost and scored (pipeline/traffic/replay_estimates.py).

Replay reads the decision records' stored embeddings (float16 blobs, decoded in bulk with numpy), never prompt
text. A one-hot router measured on the clustering the records' router used routes each record by its logged
cluster (the cluster serving computed from the full-precision embedding), so a replay with the serving router and
pool reproduces the logged decisions exactly; any other router assigns the decoded embeddings. Decisions are read
in Arrow batches; per prompt only a few numbers are kept (ReplayedTraffic), so a million records fit in memory.

Shapes: n decisions, d embedding dims, P pool models.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from uniroute import store
from uniroute.errors import UnirouteError
from uniroute.pipeline.pool import registry
from uniroute.pipeline.serving.route import DEFAULT_SETTING, resolved_setting
from uniroute.pipeline.traffic import replay_estimates as estimates
from uniroute.pipeline.traffic.replay_estimates import ReplayedTraffic
from uniroute.pipeline.traffic.replay_prices import PriceSchedule
from uniroute.routers.budgets.cost_cap import check_max_cost, lambda_for_max_cost
from uniroute.routers.explain import RouteTerms
from uniroute.routers.rule import check_budget, check_lambda
from uniroute.routers.serialize import AnyRouter, router_from_bytes
from uniroute.routers.tables import validation_proxy

log = logging.getLogger(__name__)

BATCH_ROWS = 131_072  # decisions per Arrow batch: 64 MB of float16 embeddings at d = 256


class ReplayError(UnirouteError, ValueError):
    """A replay that cannot be run as asked (one line naming the value)."""


@dataclass(frozen=True)
class ReplayWindow:
    """Which logged decisions to replay: the last N, or those decided at or after `since` (UTC), or all."""

    last: int | None = None
    since: datetime | None = None

    def __post_init__(self) -> None:
        if self.last is not None and self.since is not None:
            raise ReplayError("give --last or --since, not both")
        if self.last is not None and self.last < 1:
            raise ReplayError(f"--last must be a number of decisions >= 1, not {self.last}")

    def params(self) -> dict:
        return {"since": self.since, "last": self.last}

    def line(self) -> str:
        if self.last is not None:
            return f"the last {self.last:,} decisions"
        return f"decisions since {self.since.isoformat(sep=' ')}" if self.since is not None else "every decision"


@dataclass(frozen=True)
class ReplaySetting:
    """At which lambda or budget to replay; neither: each decision at its logged setting (its lambda, its budget
    turned into the replay router's lambda, or the replay router's default budget)."""

    lam: float | None = None
    budget: float | None = None
    max_cost: float | None = None  # a hard cap on the mean cost per prompt, calibrated on the replayed window itself

    def __post_init__(self) -> None:
        if sum(v is not None for v in (self.lam, self.budget, self.max_cost)) > 1:
            raise ReplayError("give one of --lambda, --budget or --max-cost, not several")
        try:
            object.__setattr__(self, "lam", None if self.lam is None else check_lambda(self.lam))
            object.__setattr__(self, "budget", None if self.budget is None else check_budget(self.budget))
            object.__setattr__(self, "max_cost", None if self.max_cost is None else check_max_cost(self.max_cost))
        except ValueError as exc:
            raise ReplayError(str(exc)) from None

    @property
    def as_logged(self) -> bool:
        return self.lam is None and self.budget is None and self.max_cost is None


def replay_pool(router_id: str, models: Sequence[str], active: Sequence[str], without: Sequence[str] = (),
                with_models: Sequence[str] = ()) -> tuple[str, ...]:
    """The models a replay routes among, in router order: the router's active models, plus `with_models` (models
    the router holds a row for, e.g. retired ones), minus `without`; ReplayError naming any other name."""
    unknown = [m for m in with_models if m not in models]
    if unknown:
        raise ReplayError(f"--with {','.join(unknown)}: router {router_id} has no row for it (onboard it first, "
                          f"then replay with the router that holds it); it routes {', '.join(models)}")
    pool = [m for m in models if m in set(active) | set(with_models)]
    absent = [m for m in without if m not in pool]
    if absent:
        raise ReplayError(f"--without {','.join(absent)}: not in the replayed pool ({', '.join(pool)})")
    pool = [m for m in pool if m not in set(without)]
    if not pool:
        raise ReplayError(f"the replayed pool of router {router_id} is empty: keep at least one model")
    return tuple(pool)


def repriced(router: AnyRouter, per_call: dict[str, float]) -> AnyRouter:
    """The router with the given models' cost per call replaced (a price snapshot); ReplayError for a model it
    does not route."""
    unknown = sorted(set(per_call) - set(router.models))
    if unknown:
        raise ReplayError(f"prices for {', '.join(unknown)}: the router does not route them "
                          f"(it routes {', '.join(router.models)})")
    costs = np.array([per_call.get(m, c) for m, c in zip(router.models, router.costs, strict=True)], dtype=float)
    return replace(router, costs=costs)  # type: ignore[type-var]  # every kind is a frozen dataclass


def checked_embedder(router_id: str, router: AnyRouter, embedders: pd.DataFrame, who: str | None = None) -> int:
    """The number of decisions to replay; ReplayError in one line when any was embedded by another embedder than
    the router's, or none kept an embedding."""
    other = embedders[(embedders.n > 0) & (embedders.embedder_id != router.embedder_id)]
    if len(other):
        found = ", ".join(f"{e} ({n:,} decisions)" for e, n in other.groupby("embedder_id").n.sum().items())
        raise ReplayError(f"{who or f'router {router_id}'} was fitted on embedder {router.embedder_id} but the "
                          f"decisions were "
                          f"embedded with {found}: replay them with a router on that embedder, or a window after "
                          "the switch")
    n = int(embedders.n.sum())
    if n == 0:
        missing = int(embedders.missing.sum())
        raise ReplayError(f"no logged decision with an embedding to replay ({missing:,} without one): route some "
                          "traffic with decision records on, then `uniroute inbox`")
    return n


def embeddings_of(column: pa.Array, dims: np.ndarray) -> np.ndarray:
    """(n, d) float32 from a column of float16 little-endian blobs, decoded from Arrow's one data buffer."""
    column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if len(column) == 0:
        return np.empty((0, 0), dtype=np.float32)
    d = int(dims[0])
    if column.type != pa.large_binary():
        column = column.cast(pa.large_binary())
    offsets = np.frombuffer(column.buffers()[1], dtype=np.int64)[column.offset: column.offset + len(column) + 1]
    if not (np.all(dims == d) and np.all(np.diff(offsets) == 2 * d)):
        raise ReplayError(f"decision records of different embedding sizes in one window ({sorted(set(dims))}): "
                          "replay a window of one embedder")
    data = np.frombuffer(column.buffers()[2], dtype="<f2", count=len(column) * d, offset=int(offsets[0]))
    return data.reshape(len(column), d).astype(np.float32)


def _terms_gathered(terms: RouteTerms, rows: np.ndarray) -> tuple[np.ndarray, ...]:
    """(chosen router index, its expected error, its lo, its hi, every candidate's error) of `rows` (n,) of the
    terms (R, P): one row per cluster for the per-cluster path, one per prompt otherwise."""
    chosen_pos = terms.order[:, 0]
    chosen = terms.candidates[chosen_pos][rows]
    pick = chosen_pos[rows]
    error = terms.error[rows]
    take = np.arange(len(rows))
    lo = np.full(len(rows), np.nan) if terms.error_lo is None else terms.error_lo[rows, pick]
    hi = np.full(len(rows), np.nan) if terms.error_hi is None else terms.error_hi[rows, pick]
    return chosen, error[take, pick], lo, hi, error


def _lambdas(router: AnyRouter, pool: tuple[str, ...], setting: ReplaySetting, logged: pd.DataFrame,
             cache: dict) -> np.ndarray:
    """(n,) the lambda each decision is replayed at (ReplaySetting); one conversion per distinct logged setting,
    kept in `cache` across batches (the default budget computes the routing tables)."""
    if not setting.as_logged:
        if "fixed" not in cache:
            cache["fixed"] = _fixed_lambda(router, pool, setting)
        return np.full(len(logged), cache["fixed"])
    out = np.empty(len(logged))
    keys = logged[["setting", "lam", "budget"]].astype(object).where(logged[["setting", "lam", "budget"]].notna())
    for key, index in keys.groupby(["setting", "lam", "budget"], dropna=False).indices.items():
        if key not in cache:
            cache[key] = _logged_lambda(router, pool, *key)
        out[index] = cache[key]
    return out


def _fixed_lambda(router: AnyRouter, pool: tuple[str, ...], setting: ReplaySetting) -> float:
    lam, budget, which = resolved_setting(router, pool, setting.lam, setting.budget)
    # resolved_setting gives the value of the setting `which` names, never None
    return _budget_lambda(router, pool, budget) if which == "budget" else float(lam)  # type: ignore[arg-type]


def _logged_lambda(router: AnyRouter, pool: tuple[str, ...], which: object, lam: Any, budget: Any) -> float:
    """The replay lambda of a logged setting: its lambda, its budget on this router, else the default budget."""
    if which == "lambda":
        return float(lam)
    if which == "budget" and budget is not None and not pd.isna(budget):
        return _budget_lambda(router, pool, float(budget))
    return float(resolved_setting(router, pool, None, None)[0])  # type: ignore[arg-type]  # the default has a lambda


def _budget_lambda(router: AnyRouter, pool: tuple[str, ...], budget: float) -> float:
    try:
        return float(router.lambda_for_budget(validation_proxy(router), budget, pool))
    except ValueError as exc:
        raise ReplayError(str(exc)) from None


def route_logged(router: AnyRouter, pool: tuple[str, ...], lam: np.ndarray, X: np.ndarray | None,
                 clusters: np.ndarray | None) -> tuple[np.ndarray, ...]:
    """(chosen, expected error, lo, hi, every pool model's error (n, P)) of n decisions at their lambdas (n,): per
    cluster when the router is one-hot and `clusters` (n,) are on its clustering, else from the embeddings X."""
    n = len(lam)
    chosen = np.empty(n, dtype=np.int64)
    err, lo, hi = np.empty(n), np.empty(n), np.empty(n)
    every = np.empty((n, len(pool)))
    if router.one_hot and clusters is None:
        clusters = router.prompt_clusters(X)  # type: ignore[arg-type]  # X is embedded when clusters are not known
    for value in np.unique(lam):
        rows = np.flatnonzero(lam == value)
        if router.one_hot:
            # one-hot: a cluster router, and every row's cluster is known by now
            terms, index = router.cluster_terms(float(value), pool), clusters[rows]  # type: ignore[attr-defined, index]
        else:
            # not one-hot: the caller embedded every prompt
            terms, index = router.route_terms(X[rows], float(value), pool), np.arange(len(rows))  # type: ignore[index]
        chosen[rows], err[rows], lo[rows], hi[rows], every[rows] = _terms_gathered(terms, index)
    return chosen, err, lo, hi, every


@dataclass(frozen=True)
class ReplayRouter:
    """The router a replay routes with: its id, the router, the pool, the clustering its Psi is measured on (records
    routed on the same clustering keep their logged cluster), and the prices that replace its costs by date."""

    router_id: str
    router: AnyRouter
    pool: tuple[str, ...]
    same_clusters: frozenset[str]  # record router ids whose clustering is this router's
    prices: PriceSchedule = PriceSchedule()  # `router`'s costs replaced by these in force at each decision's time


def replayed_traffic(con: store.Connection, using: ReplayRouter, window: ReplayWindow,
                     setting: ReplaySetting = ReplaySetting(), batch_rows: int = BATCH_ROWS) -> ReplayedTraffic:
    """Re-route the window's logged decisions with `using` (see the module docstring)."""
    router, pool = using.router, using.pool
    names = list(router.models)
    index_of = {m: i for i, m in enumerate(names)}
    pool_pos = {m: j for j, m in enumerate(m for m in router.models if m in set(pool))}
    parts: list[dict[str, np.ndarray]] = []
    priced: dict[int, AnyRouter] = {}  # price period -> the router at its prices
    lambdas: dict[int, dict] = {}  # price period -> its lambda cache (_lambdas)
    # The cap holds on the traffic replayed, not on a proxy of it: the window's own prompts are the mix (read before
    # the batches: one open result per connection).
    window_X = None if setting.max_cost is None else window_embeddings(con, window, batch_rows)
    for batch in _batches(con, window, batch_rows):
        frame = batch.select([c for c in batch.schema.names if c != "embedding"]).to_pandas()
        known = frame.router_id.isin(using.same_clusters).to_numpy() & frame.cluster.notna().to_numpy()
        if router.one_hot:  # a logged cluster outside the router's K (a row stored before ingest checked it)
            logged = frame.cluster.to_numpy(dtype=float, na_value=-1.0)
            known &= (logged >= 0) & (logged < router.k)
        X = None
        if not (router.one_hot and known.all()):
            X = embeddings_of(batch.column("embedding"), frame.embedding_dim.to_numpy())
        clusters = None
        if router.one_hot:
            clusters = np.empty(len(frame), dtype=np.int64)
            clusters[known] = frame.cluster.to_numpy()[known].astype(np.int64)
            if (~known).any():
                clusters[~known] = router.prompt_clusters(X[~known])  # type: ignore[assignment, index]  # X set above
        n = len(frame)
        lam, cost = np.empty(n), np.empty(n)
        chosen, err, lo, hi = np.empty(n, dtype=np.int64), np.empty(n), np.empty(n), np.empty(n)
        every = np.empty((n, len(pool)))
        periods = using.prices.periods(frame.decided_at.to_numpy())
        for period in np.unique(periods).tolist():
            rows = np.flatnonzero(periods == period)
            if period not in priced:
                priced[period] = repriced(router, using.prices.in_force(period))
                lambdas[period] = {}
                if setting.max_cost is not None and window_X is not None:  # the cap at this period's prices
                    try:
                        lambdas[period]["fixed"] = lambda_for_max_cost(priced[period], window_X, setting.max_cost,
                                                                       pool)
                    except ValueError as exc:
                        raise ReplayError(str(exc)) from None
            at = priced[period]
            lam[rows] = _lambdas(at, pool, setting, frame.iloc[rows], lambdas[period])
            chosen[rows], err[rows], lo[rows], hi[rows], every[rows] = route_logged(
                at, pool, lam[rows], None if X is None else X[rows], None if clusters is None else clusters[rows])
            cost[rows] = at.costs[chosen[rows]]
        for m in frame.model.unique():
            if m not in index_of:
                index_of[m] = len(names)
                names.append(m)
        served = frame.model.map(index_of).to_numpy(np.int32)
        served_pos = frame.model.map(pool_pos).to_numpy()
        in_pool = ~pd.isna(served_pos)
        served_by_replay = np.full(len(frame), np.nan)
        served_by_replay[in_pool] = 1.0 - every[np.flatnonzero(in_pool), served_pos[in_pool].astype(np.int64)]
        parts.append({
            "decision_id": frame.decision_id.to_numpy(object), "decided_at": frame.decided_at.to_numpy(),
            "served": served, "served_score": frame.expected_score.to_numpy(float),
            "served_cost": frame.expected_cost.to_numpy(float), "propensity": frame.propensity.to_numpy(float),
            "explored": frame.explored.to_numpy(bool), "outcome": frame.outcome_score.to_numpy(float),
            "chosen": chosen.astype(np.int32), "score": 1.0 - err, "score_lo": 1.0 - hi, "score_hi": 1.0 - lo,
            "cost": cost, "served_by_replay": served_by_replay, "lam": lam,
        })
    joined = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]} if parts else None
    if joined is None:
        raise ReplayError(f"no logged decision to replay in {window.line()}")
    return ReplayedTraffic(models=tuple(names), **joined)


def window_embeddings(con: store.Connection, window: ReplayWindow, batch_rows: int = BATCH_ROWS) -> np.ndarray:
    """(n, d) the window's decoded embeddings, in replayed_traffic's order (newest first)."""
    parts = [embeddings_of(b.column("embedding"), b.column("embedding_dim").to_numpy())
             for b in _batches(con, window, batch_rows)]
    return np.concatenate(parts) if parts else np.empty((0, 0), dtype=np.float32)


def _batches(con: store.Connection, window: ReplayWindow, batch_rows: int) -> Iterator[pa.RecordBatch]:
    reader = store.query_batches(con, "replay_decisions", batch_rows, **window.params())
    try:
        for batch in reader:
            if batch.num_rows:
                yield batch
    finally:
        reader.close()  # an error mid-way must not leave the session's connection with an open result


def setting_line(setting: ReplaySetting) -> str:
    """How the decisions were replayed, for the report."""
    if setting.lam is not None:
        return f"lambda {setting.lam:g}"
    if setting.budget is not None:
        return f"budget {setting.budget:g}"
    if setting.max_cost is not None:
        return f"max cost {setting.max_cost:g} per prompt (calibrated on the replayed decisions)"
    return f"each decision at its logged setting (lambda, budget, or the router's {DEFAULT_SETTING})"


def replay_router(con: store.Connection, which: str, without: Sequence[str] = (), with_models: Sequence[str] = (),
                  prices: PriceSchedule = PriceSchedule()) -> ReplayRouter:
    """The router to replay with: "champion", "challenger" (the newest build not promoted) or a stored router id,
    repriced by date, over its active pool edited by without / with_models."""
    if which == "champion":
        version = registry.load_champion(con)
    elif which == "challenger":
        row = store.query(con, "router_latest_challenger")
        if row.empty:
            raise ReplayError("no challenger in the store: every build so far was promoted (name a router id)")
        version = registry.load_router_version(con, str(row.router_id.iloc[0]))
    else:
        try:
            version = registry.load_router_version(con, which)
        except LookupError as exc:
            raise ReplayError(f"{exc}: `uniroute sql \"select router_id, created_at from routers\"` lists them") \
                from None
    router = version.router
    repriced(router, {model: cost for _, model, cost in prices.prices})  # a model it does not route: refused here
    active = store.query(con, "active_models").model.tolist()
    pool = replay_pool(version.router_id, router.models, active, without, with_models)
    return ReplayRouter(version.router_id, router, pool, frozenset(), prices)


def with_logged_clusters(con: store.Connection, using: ReplayRouter, record_routers: Sequence[str]) -> ReplayRouter:
    """`using`, knowing which record routers measured their Psi on its clustering (their logged clusters hold)."""
    if not using.router.one_hot or not record_routers:
        return using
    mine = registry.router_clustering_id(using.router)
    rows = store.query(con, "clustering_of_routers", router_ids=list(record_routers))
    # A record's cluster is its nearest centroid only when a one-hot router logged it (a soft map logs its
    # likeliest cluster, which routing by centroid would not give): a few distinct routers, each loaded once.
    same = frozenset(r.router_id for r in rows.itertuples(index=False)
                     if r.clustering_id == mine and router_from_bytes(bytes(r.router)).one_hot)
    return replace(using, same_clusters=same)


def replay(con: store.Connection, using: ReplayRouter, window: ReplayWindow,
           setting: ReplaySetting = ReplaySetting(), inputs: dict | None = None,
           batch_rows: int = BATCH_ROWS) -> tuple[dict, ReplayedTraffic]:
    """Replay the window's decisions with `using` (ReplayError in one line for a router on another embedder):
    the result document (replay_estimates) and the per-decision arrays."""
    embedders = store.query(con, "replay_embedders", **window.params())
    checked_embedder(using.router_id, using.router, embedders)
    using = with_logged_clusters(con, using, embedders.router_id.dropna().unique().tolist())
    traffic = replayed_traffic(con, using, window, setting, batch_rows)
    missing = int(embedders.missing.sum())
    result = {
        "router_id": using.router_id, "pool": list(using.pool), "window": window.line(),
        "setting": setting_line(setting), "inputs": inputs or {},
        "first": str(pd.Timestamp(traffic.decided_at.min())), "last": str(pd.Timestamp(traffic.decided_at.max())),
        "without_embedding": missing,
        "overall": estimates.overall(traffic),
        "models": estimates.per_model(traffic).to_dict("records"),
        "outcomes": estimates.with_outcomes(traffic),
    }
    return result, traffic


def record_replay(con: store.Connection, result: dict) -> str:
    """Keep a replay's inputs and results in `replays` (in the caller's transaction); its id."""
    replay_id = uuid.uuid4().hex
    o = result["overall"]
    store.execute(con, "replay_insert", replay_id=replay_id, created_at=datetime.now(UTC).replace(tzinfo=None),
                  router_id=result["router_id"], window_from=pd.Timestamp(result["first"]).to_pydatetime(),
                  window_to=pd.Timestamp(result["last"]).to_pydatetime(), n_decisions=o["decisions"],
                  inputs=json.dumps(result["inputs"], default=str), expected_score=o["expected_score"]["mean"],
                  expected_cost=o["expected_cost"]["mean"], results=json.dumps(result, default=_plain))
    return replay_id


def _plain(value: object) -> object:
    """JSON for numpy scalars and timestamps in a result document."""
    if isinstance(value, np.generic):
        return value.item()
    return str(value)


def replay_line(result: dict) -> str:
    """One line: what the replay found."""
    o = result["overall"]
    return (f"replayed {o['decisions']:,} decisions with {result['router_id']}: expected score "
            f"{o['expected_score']['mean']:.4f} (served {o['served_expected_score']['mean']:.4f}), expected cost "
            f"{o['expected_cost']['mean']:.6g} per prompt (served {o['served_expected_cost']['mean']:.6g}); "
            f"{o['changed']:,} change model")
