"""Routing as an operation (the read side): the champion, or the published snapshot while the store is busy,
answers a checked request; the decisions are logged in one session when asked."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from uniroute.operations.context import Context
from uniroute.pipeline.serving import RoutingError, RoutingRequest, log_decisions, route_texts, routing_source
from uniroute.routers.explain import EXPLAIN_COLUMNS


@dataclass(frozen=True, eq=False)
class Routed:
    """The decisions (one row per prompt), where they came from, and the logged batch (None: not logged)."""

    decisions: pd.DataFrame
    router_id: str
    source: str  # the store's champion, or the published version answering while the store is busy
    batch_id: str | None

    @property
    def from_snapshot(self) -> bool:
        return self.source.startswith("published")

    def explanation(self) -> pd.DataFrame:
        """One row per prompt and candidate model (prompt_index, then routers.explain.EXPLAIN_COLUMNS), rank 1
        the chosen model; empty unless routed with explain=True."""
        columns = ["prompt_index", *EXPLAIN_COLUMNS]
        if "explain" not in self.decisions.columns:
            return pd.DataFrame(columns=columns)
        rows = [{"prompt_index": int(i), **term}
                for i, terms in zip(self.decisions["prompt_index"], self.decisions["explain"], strict=True)
                for term in terms]
        return pd.DataFrame(rows, columns=columns)


def route(ctx: Context, texts: Sequence[str], request: RoutingRequest, log: bool = False,
          router_id: str | None = None, explain: bool = False) -> Routed:
    """Route texts as requested (RoutingError in one line for a bad request) with the champion, or with the stored
    version router_id; log the decisions when asked; with explain, the terms of each argmin (Routed.explanation)."""
    source = routing_source(ctx.db_path, ctx.published_dir, router_id)
    decisions = route_texts(source, texts, lam=request.lam, budget=request.budget, pool=request.pool,
                            cache_dir=ctx.cache_dir, explain=explain)
    batch_id = None
    if log:
        with ctx.session("route-log", inputs=source.router_id) as s:
            batch_id = log_decisions(s.con, decisions)
            s.detail = f"batch {batch_id}"
    return Routed(decisions, source.router_id, source.source, batch_id)


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
