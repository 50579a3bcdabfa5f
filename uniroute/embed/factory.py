"""Embedders by name."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from uniroute.embed.minilm import MiniLMEmbedder, load_minilm
from uniroute.embed.tfidf import TfidfEmbedder, fit_tfidf

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)

EMBEDDERS = ("minilm", "tfidf")


def make_embedder(
    name: str,
    fit_texts: Sequence[str] | None = None,
    seed: int = 0,
    batch_size: int = 128,
    progress: bool = True,
) -> MiniLMEmbedder | TfidfEmbedder:
    """The embedder called `name` ("minilm" or "tfidf"; tfidf is fitted on fit_texts)."""
    if name == "minilm":
        return load_minilm(batch_size=batch_size, progress=progress)
    if name == "tfidf":
        if fit_texts is None:
            raise ValueError("the tfidf embedder is fitted on the training prompts: pass fit_texts")
        return fit_tfidf(fit_texts, seed=seed, progress=progress)
    raise ValueError(f"unknown embedder {name!r}; known: {', '.join(EMBEDDERS)}")
