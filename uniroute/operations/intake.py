"""Operations on data coming in: ingest a log, the inbox (benchmark logs, decision records and outcomes), set a
model's cost or price, fill the embedding cache, label prompts. (Named `intake`, not `ingest`: a submodule named
like an operation would shadow that function on the `uniroute.operations` facade.)"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from uniroute.embed import embed_cached
from uniroute.embed.annotator import AnnotatorConfig, annotate
from uniroute.ingest import InboxOutcome, IngestSummary, ingest_file, process_inbox, set_default_cost
from uniroute.ingest.decisions import FORMAT_DECISIONS
from uniroute.ingest.prices import Price, record_prices
from uniroute.operations.context import Context, OperationError
from uniroute.operations.pool import Onboarding, onboard


def ingest(ctx: Context, path: Path, split: str | None = None, progress: bool = False) -> IngestSummary:
    """Validate one log file and load it in one transaction (IngestError naming file, row and value)."""
    with ctx.session("ingest", inputs=str(path)) as s:
        summary = ingest_file(s.con, path, split=split, progress=progress)
        s.detail = summary.line()
    return summary


def set_cost(ctx: Context, model: str, cost: float) -> str:
    """Set a model's default cost (used where its results carry none); the one-line summary."""
    return set_costs(ctx, {model: cost})


def set_costs(ctx: Context, costs: dict[str, float], source: str = "") -> str:
    """Set several models' default costs in one transaction (all or none); the one-line summary."""
    with ctx.session("set-cost", inputs=source or ",".join(costs)) as s:
        for model, cost in costs.items():
            set_default_cost(s.con, model, cost)
        s.detail = (f"{next(iter(costs))}: default cost {next(iter(costs.values()))}" if len(costs) == 1
                    else f"default costs of {len(costs)} models set from {source or 'the request'}")
    return s.detail


def set_prices(ctx: Context, prices: Sequence[Price], source: str = "") -> str:
    """Record dated prices in one transaction (all or none; an unknown or retired model refused in one line); the
    one-line summary. Routing charges a per-call price from the next build or onboarding (price_snapshot)."""
    with ctx.session("set-price", inputs=source or ",".join(p.model for p in prices)) as s:
        record_prices(s.con, prices, source or "set-price")
        s.detail = prices[0].line() if len(prices) == 1 else f"{len(prices)} prices set from {source or 'the request'}"
    return s.detail


def embedded(ctx: Context, texts: Sequence[str], embedder: Any, **options: Any) -> np.ndarray:
    """(n, d) float32 rows of texts through the store's cache (embed_cached's options: client, chunk_texts...).

    A cache fill: each chunk commits on its own, so a run killed half-way keeps what it embedded.
    """
    with ctx.session("embed", inputs=str(getattr(embedder, "embedder_id", "")), atomic=False) as s:
        return embed_cached(s.con, list(texts), embedder, **options)


def annotated(ctx: Context, prompts: pd.DataFrame, config: AnnotatorConfig, source: str) -> pd.DataFrame:
    """0/1 attribute labels of prompts (columns prompt_id, prompt), answers cached in the store."""
    with ctx.session("annotate", inputs=source, atomic=False) as s:
        labels = annotate(s.con, prompts["prompt"].tolist(), config)
        s.detail = f"{len(prompts)} prompts labelled by {config.annotator_id}"
    labels.insert(0, "prompt_id", prompts["prompt_id"].to_numpy())
    return labels


@dataclass(frozen=True)
class InboxRun:
    """What one pass over the inbox did: each file's outcome, and the onboarding of the models that landed."""

    outcomes: tuple[InboxOutcome, ...]
    onboarding: Onboarding | None  # None: nothing landed, or onboarding was not asked for

    @property
    def landed(self) -> list[str]:
        return list(dict.fromkeys(m for o in self.outcomes for m in o.landed_models))

    @property
    def failed(self) -> list[str]:
        return [o.name for o in self.outcomes if o.status == "failed"]


def inbox(ctx: Context, onboard_landed: bool = True) -> InboxRun:
    """Ingest every complete inbox file and every finished file of the decision spool (one session each; files
    move to done/ or failed/ of their folder), then onboard the models whose validation results landed."""
    if ctx.inbox_dir is None:
        raise OperationError(f"no inbox folder for the store at {ctx.db_path}")
    outcomes: tuple = ()
    if ctx.spool_dir is not None and ctx.spool_dir.is_dir():
        # The serving spool first, so outcomes in the inbox find their decisions. Its own writers rename a file
        # from .part when finished, but another writer may write one in place: a file is taken once it stood still
        # (one wait per run for the youngest), a growing one is left for the next run. It takes decision records
        # only, by their content: a benchmark log written there is refused, never training data.
        outcomes = tuple(process_inbox(ctx.db_path, ctx.spool_dir, settle_seconds=ctx.settle_seconds,
                                       on_wait=ctx.on_wait, only=FORMAT_DECISIONS))
    outcomes += tuple(process_inbox(ctx.db_path, ctx.inbox_dir, settle_seconds=ctx.settle_seconds,
                                    on_wait=ctx.on_wait))
    run = InboxRun(outcomes, None)
    if onboard_landed and run.landed:
        run = InboxRun(outcomes, onboard(ctx, run.landed))
    return run
