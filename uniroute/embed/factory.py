"""Embedders by name."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from uniroute.embed.minilm import MiniLMEmbedder, load_minilm
from uniroute.embed.minilm_onnx import MiniLMOnnxEmbedder, load_minilm_onnx
from uniroute.embed.static import StaticEmbedder, load_static
from uniroute.embed.tfidf import TfidfEmbedder, fit_tfidf

log = logging.getLogger(__name__)

EMBEDDERS = ("minilm", "minilm-onnx", "static", "tfidf")
# The embedders whose model file is built once from the local MiniLM into a cache folder.
BUILT_EMBEDDERS = ("minilm-onnx", "static")

AnyEmbedder = MiniLMEmbedder | MiniLMOnnxEmbedder | StaticEmbedder | TfidfEmbedder


def make_embedder(
    name: str,
    fit_texts: Sequence[str] | None = None,
    seed: int = 0,
    batch_size: int = 128,
    progress: bool = True,
    cache_dir: Path | None = None,
) -> AnyEmbedder:
    """The embedder called `name` (one of EMBEDDERS).

    `minilm-onnx` and `static` build their model file from the local MiniLM into cache_dir the first time
    (`Settings.cache_dir`, passed in by the edges); `tfidf` is fitted on fit_texts. batch_size is MiniLM's
    (sentence-transformers) batch; the ONNX embedder uses its own, smaller, length-sorted batches.
    """
    if name in BUILT_EMBEDDERS and cache_dir is None:
        raise ValueError(f"the {name} embedder builds its model file once into a cache folder: pass cache_dir "
                         "(Settings.cache_dir, under UNIROUTE_HOME)")
    if name == "minilm":
        return load_minilm(batch_size=batch_size, progress=progress)
    if name == "minilm-onnx":
        return load_minilm_onnx(cache_dir, progress=progress)
    if name == "static":
        return load_static(cache_dir, progress=progress)
    if name == "tfidf":
        if fit_texts is None:
            raise ValueError("the tfidf embedder is fitted on the training prompts: pass fit_texts")
        return fit_tfidf(fit_texts, seed=seed, progress=progress)
    raise ValueError(f"unknown embedder {name!r}; known: {', '.join(EMBEDDERS)}")
