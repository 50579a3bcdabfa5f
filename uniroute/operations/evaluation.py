"""The store's part of an evaluation: prompt embeddings through the cache, so the experiment harness takes
plain arrays and never opens the store."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

import numpy as np
import pandas as pd

from uniroute.embed import embedder_kind, make_embedder
from uniroute.experiments.attribute_embeddings import attribute_heads_embeddings
from uniroute.operations.context import Context
from uniroute.operations.intake import embedded


def prompt_embeddings(ctx: Context, texts: Sequence[str], embedder: str, seed: int) -> tuple[np.ndarray, str]:
    """(N, d) float32 embeddings of texts through the store's cache, and the embedder id.

    An embedder fitted on what it embeds (TF-IDF, static-tuned) is fitted once per evaluation on the texts of all
    prompts (no labels are used, so no test information leaks into routing; refitting per trial would dominate the
    run time). static-tuned's targets are the teacher's vectors of those texts, a function of the text alone like
    TF-IDF's counts: no score, no model's answer, no split enters the fit. They come through the cache, so an
    evaluation whose home has minilm-onnx's vectors pays no teacher cost.
    """
    fit_texts = list(texts) if embedder_kind(embedder).fitted else None
    model = make_embedder(embedder, fit_texts=fit_texts, seed=seed, cache_dir=ctx.cache_dir,
                          teacher_vectors=lambda teacher, some: embedded(ctx, some, teacher))
    X = embedded(ctx, texts, model)
    return np.ascontiguousarray(X, dtype=np.float32), str(model.embedder_id)


def attribute_embeddings(ctx: Context, texts: Sequence[str], prompt_ids: Sequence[str], labels: pd.DataFrame,
                         base: str, seed: int, fit_ids: Collection[str] | None = None,
                         ) -> tuple[np.ndarray, str, dict[str, Any]]:
    """(N, A + 1) attribute embeddings of every prompt, their embedder id and what the heads were fitted on:
    heads distilled on the base embedder's cached vectors (experiments.attribute_embeddings)."""
    X_base, base_id = prompt_embeddings(ctx, texts, base, seed)
    return attribute_heads_embeddings(X_base, base_id, prompt_ids, labels, fit_ids)
