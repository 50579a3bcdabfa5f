"""Serving operations (the read side, and publishing): the champion, or the published snapshot while the store is busy,
answers a checked request; every decision is recorded to the spool (pipeline/serving/records.py) unless switched off,
and the batch is also appended to routing_log in one session when asked (`route --log`). Publishing writes the
champion's routing tables as a versioned snapshot."""

from __future__ import annotations

import csv
import io
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from uniroute.pipeline.serving.calibration import Calibration, calibration_at
from uniroute.pipeline.serving.quick_route import quick_source, remember_store_answer, store_key
from uniroute.pipeline.serving.records import Recording, Served, decision_records, recording_of
from uniroute.pipeline.serving.route import (
    DecidedColumns,
    RoutingError,
    RoutingRequest,
    RoutingSource,
    decided_columns,
    log_decisions,
    route_batch,
    routing_source,
)
from uniroute.pipeline.serving.spool import DecisionSpool
from uniroute.routers.explain import EXPLAIN_COLUMNS

if TYPE_CHECKING:  # route_quickly runs without pandas, the store or the settings' pydantic (publish imports them)
    import numpy as np
    import pandas as pd

    from uniroute.environment import QuickSettings
    from uniroute.operations.context import Context
    from uniroute.pipeline.serving.publish import PublishResult

log = logging.getLogger(__name__)


@dataclass(frozen=True, eq=False)
class Routed:
    """The decisions (one row per prompt), where they came from, the logged batch (None: not logged) and the
    spool file its decision records went to (None: not recorded)."""

    decisions: pd.DataFrame
    router_id: str
    source: str  # the store's champion, or the published version answering while the store is busy
    batch_id: str | None
    recorded_to: Path | None = None
    calibration: str | None = None  # which prompt mix a budget or max cost was calibrated on
    latency_note: str | None = None  # what a latency cap left out, and kept with no recorded latency

    @property
    def from_snapshot(self) -> bool:
        return self.source.startswith("published")

    def explanation(self) -> pd.DataFrame:
        """One row per prompt and candidate model (prompt_index, then routers.explain.EXPLAIN_COLUMNS), rank 1
        the chosen model; empty unless routed with explain=True."""
        import pandas as pd

        columns = ["prompt_index", *EXPLAIN_COLUMNS]
        if "explain" not in self.decisions.columns:
            return pd.DataFrame(columns=columns)
        rows = [{"prompt_index": int(i), **term}
                for i, terms in zip(self.decisions["prompt_index"], self.decisions["explain"], strict=True)
                for term in terms]
        return pd.DataFrame(rows, columns=columns)


def route(ctx: Context, texts: Sequence[str], request: RoutingRequest, log: bool = False,
          router_id: str | None = None, record: bool = True, source: str = "api", explain: bool = False) -> Routed:
    """Route texts as requested (RoutingError in one line for a bad request) with the champion, or with the stored
    version router_id. Each decision is recorded to the spool (ctx.spool_dir, as ctx.recording says; never the
    store, so routing never waits for its writer) unless record is False; `source` names the serving path (cli,
    file, api). `log` also appends the batch to the routing_log table, in a store session. With explain, the
    terms of each argmin (Routed.explanation)."""
    key = store_key(ctx.db_path) if router_id is None and ctx.cache_dir is not None else None
    answering = routing_source(ctx.db_path, ctx.published_dir, router_id, ctx.cache_dir)
    if key is not None and not answering.source.startswith("published"):
        # The champion as this read found it, for the next one-prompt route to answer without the store (quick_route)
        remember_store_answer(ctx.cache_dir, key, ctx.db_path, answering)  # type: ignore[arg-type]  # checked above
    recording = ctx.recording if record and ctx.spool_dir is not None else Recording(enabled=False)
    calibration = Calibration()
    # The traffic is read only when something uses it: a budget's or cap's prompt mix, a latency cap's recorded
    # latencies, an explanation's latency column.
    if request.budget is not None or request.max_cost is not None or request.max_latency is not None or explain:
        calibration = calibration_at(ctx.db_path, answering.router.embedder_id, ctx.traffic_window)
    batch = route_batch(answering, texts, lam=request.lam, budget=request.budget, pool=request.pool,
                        cache_dir=ctx.cache_dir, recording=recording if recording.enabled else None, explain=explain,
                        max_cost=request.max_cost, calibration=calibration, max_latency=request.max_latency)
    batch_id = None
    if log:  # first: a home that refuses the writer says so in one line, before anything is recorded
        with ctx.session("route-log", inputs=answering.router_id) as s:
            batch_id = log_decisions(s.con, batch.decisions)
            s.detail = f"batch {batch_id}"
    recorded_to = None
    if recording.enabled:
        served = Served(source, answering.router_id, batch.embedder_id, answering.publication_version)
        recorded_to = _recorded(ctx.spool_dir, recording, served, answering,  # type: ignore[arg-type]  # a spool_dir
                                batch.decisions, batch.X, batch.propensity, batch.explored, texts, ctx.warn)
    return Routed(batch.decisions, answering.router_id, answering.source, batch_id, recorded_to, calibration.source,
                  batch.latency_note)


@dataclass(frozen=True, eq=False)
class RoutedQuickly:
    """What route_quickly answered: the decisions as columns (route.DecidedColumns: `.records()` as JSON, `.frame()`
    as a table), the router and the spool file their records went to (None: not recorded)."""

    decided: DecidedColumns
    router_id: str
    source: str
    recorded_to: Path | None = None


def route_quickly(settings: QuickSettings, texts: Sequence[str], request: RoutingRequest, record: bool = True,
                  source: str = "api", on_warning: Callable[[str], None] | None = None) -> RoutedQuickly | None:
    """route() of a request that reads no traffic (no budget, max cost or latency cap; no explanation, which the
    caller leaves out) and logs to no table, answered by the champion from the compact publication
    (pipeline/serving/quick_route.py) when that proves to be what the store would answer; None when it is not:
    call route(). The decision and its record are route()'s own (route.decided_columns, the same records to the
    same spool); pandas, DuckDB and the store are never imported, most of a one-prompt `uniroute route`'s time."""
    if request.budget is not None or request.max_cost is not None or request.max_latency is not None:
        return None
    found = quick_source(settings.db_path, settings.published_dir, settings.cache_dir)
    if found is None:
        return None
    answering = found.source
    recording = recording_of(settings) if record else Recording(enabled=False)
    # The default setting of the whole pool was worked out at publish time; a named pool's is remembered in the
    # cache as on the store path.
    resolved = found.default if request.lam is None and request.pool is None else None
    decided = decided_columns(answering, texts, lam=request.lam, pool=request.pool, cache_dir=settings.cache_dir,
                              recording=recording if recording.enabled else None, resolved=resolved)
    recorded_to = None
    if recording.enabled:
        served = Served(source, answering.router_id, decided.embedder_id, answering.publication_version)
        recorded_to = _recorded(settings.spool_dir, recording, served, answering, decided.plain_columns(), decided.X,
                                decided.propensity, decided.explored, texts, on_warning or log.warning)
    return RoutedQuickly(decided, answering.router_id, answering.source, recorded_to)


def _recorded(spool_dir: Path, recording: Recording, served: Served, answering: RoutingSource,
              decisions: pd.DataFrame | Mapping[str, Any], X: np.ndarray, propensity: np.ndarray,
              explored: np.ndarray, texts: Sequence[str], warn: Callable[[str], None]) -> Path | None:
    """The decisions' records written to the spool: the finished file, or None. A spool that cannot be written is
    said to warn, never an error: a read-only or full home still routes, the answer matters more than its record."""
    records = decision_records(decisions, X, answering.router, served,
                               texts=list(texts) if recording.keep_prompt else None,
                               propensity=propensity, explore=explored)
    try:
        with DecisionSpool(spool_dir) as spool:
            spool.write(records)
        return spool.finished[-1] if spool.finished else None
    except OSError as exc:
        warn(f"decisions not recorded: cannot write the spool {spool_dir} ({exc.strerror or exc})")
        return None


def prompts_from_file(path: Path) -> tuple[list[str], list[dict]]:
    """The prompts of a JSONL file of {"prompt": ...} objects or a CSV with a `prompt` column, and each line's
    other fields (an id, a user, a session: what the caller wants back beside each decision); RoutingError naming
    the line for anything else."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RoutingError(f"{path}: cannot read the prompts: {exc}") from exc
    prompts: list[str] = []
    extras: list[dict] = []
    if text.lstrip().startswith("{"):
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except (json.JSONDecodeError, RecursionError) as exc:
                raise RoutingError(f"{path}: line {number} is not JSON ({getattr(exc, 'msg', 'nested too deep')})") \
                    from None
            if not isinstance(record, dict) or not isinstance(record.get("prompt"), str):
                raise RoutingError(f'{path}: line {number} has no "prompt" text')
            prompts.append(record.pop("prompt"))
            extras.append(record)
        return prompts, extras
    reader = csv.DictReader(io.StringIO(text))
    if reader.fieldnames is None or "prompt" not in reader.fieldnames:
        raise RoutingError(f"{path}: a CSV of prompts needs a `prompt` column (or give JSON lines)")
    for row in reader:
        prompts.append(row.pop("prompt"))
        extras.append(row)
    return prompts, extras


def publish(ctx: Context, force: bool = False) -> PublishResult:
    """Write the champion's routing tables for the active pool (a new version unless nothing changed or force);
    `published/current` switches after the commit."""
    from uniroute.pipeline.serving.publish import publish_champion, switch_current_after_commit

    with ctx.session("publish", inputs="force" if force else "") as s:
        result = publish_champion(s.con, ctx.published_dir, force=force, window=ctx.traffic_window)
        switch_current_after_commit(s, ctx.published_dir, result)
        s.detail = result.line()
    from uniroute.operations.upkeep import reconciled  # MLflow's and the pool's checks: not on routing's path

    reconciled(ctx)
    return result
