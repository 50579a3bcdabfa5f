"""Embedders by name."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from uniroute.embed.attributes import AttributeEmbedder, fit_attribute_embedder
from uniroute.embed.minilm import MiniLMEmbedder, load_minilm
from uniroute.embed.tfidf import TfidfEmbedder, fit_tfidf

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)

EMBEDDERS = ("minilm", "tfidf", "attributes")


def make_embedder(
    name: str,
    fit_texts: Sequence[str] | None = None,
    seed: int = 0,
    batch_size: int = 128,
    progress: bool = True,
    attribute_labels: np.ndarray | None = None,
) -> MiniLMEmbedder | TfidfEmbedder | AttributeEmbedder:
    """The embedder called `name` ("minilm", "tfidf" or "attributes"; tfidf is fitted on fit_texts, attributes
    distils heads on MiniLM from fit_texts and their (n, 7) attribute_labels)."""
    if name == "attributes":
        if fit_texts is None or attribute_labels is None:
            raise ValueError("the attributes embedder is distilled from labelled prompts: pass fit_texts and "
                             "attribute_labels")
        return fit_attribute_embedder(load_minilm(batch_size=batch_size, progress=progress), fit_texts,
                                      attribute_labels)
    if name == "minilm":
        return load_minilm(batch_size=batch_size, progress=progress)
    if name == "tfidf":
        if fit_texts is None:
            raise ValueError("the tfidf embedder is fitted on the training prompts: pass fit_texts")
        return fit_tfidf(fit_texts, seed=seed, progress=progress)
    raise ValueError(f"unknown embedder {name!r}; known: {', '.join(EMBEDDERS)}")
