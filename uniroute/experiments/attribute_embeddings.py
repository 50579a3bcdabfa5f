"""Prompt-attribute embeddings for an evaluation: heads distilled on the base embeddings of labelled prompts."""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from typing import Any

import numpy as np
import pandas as pd

from uniroute.embed.attributes import fit_attribute_heads

log = logging.getLogger(__name__)


def attribute_heads_embeddings(
    X_base: np.ndarray,
    base_id: str,
    prompt_ids: Sequence[str],
    labels: pd.DataFrame,
    fit_ids: Collection[str] | None = None,
) -> tuple[np.ndarray, str, dict[str, Any]]:
    """(N, A + 1) attribute embeddings of every prompt, the embedder id, and what the heads were fitted on.

    X_base (N, d): the prompts' base embeddings (embedder id base_id). labels: 0/1 attribute columns indexed by
    prompt_id (embed.read_attribute_labels). Heads are fitted on the labelled prompts among fit_ids (all labelled
    prompts when None; a transfer passes the training log's); every prompt is then embedded by the heads, labelled
    or not.
    """

    allowed = set(fit_ids) if fit_ids is not None else None
    rows = [i for i, pid in enumerate(prompt_ids) if pid in labels.index and (allowed is None or pid in allowed)]
    if len(rows) < 2:
        raise ValueError(f"only {len(rows)} of the prompts to fit on have attribute labels (the labels file names "
                         f"{len(labels)} prompts): label the training prompts")
    y = labels.loc[[prompt_ids[i] for i in rows]].to_numpy()
    heads = fit_attribute_heads(X_base[rows], y, tuple(labels.columns), base_id)
    predicted = heads.probabilities(X_base[rows]) >= 0.5
    info = {
        "attributes": list(labels.columns),
        "labelled_prompts_fitted": len(rows),
        "label_rate": dict(zip(labels.columns, y.mean(axis=0).round(4).tolist(), strict=True)),
        "head_training_accuracy": dict(zip(labels.columns, (predicted == y).mean(axis=0).round(4).tolist(),
                                           strict=True)),
        "base_embedder_id": base_id,
    }
    log.info("attribute heads on %d labelled prompts: %s", len(rows), info["head_training_accuracy"])
    return heads.transform(X_base), heads.embedder_id, info
