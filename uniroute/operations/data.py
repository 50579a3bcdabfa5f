"""Operations on data in: ingest a log, set a model's cost, fill the embedding cache, label prompts."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from uniroute.embed import embed_cached
from uniroute.embed.annotator import AnnotatorConfig, annotate
from uniroute.ingest import IngestSummary, ingest_file, set_default_cost
from uniroute.ingest.prices import Price, record_prices
from uniroute.operations.context import Context


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
