"""Embedders by name."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import cast

import numpy as np

from uniroute.embed.attributes import AttributeEmbedder, fit_attribute_embedder
from uniroute.embed.kinds import BUILT_EMBEDDERS, EMBEDDERS
from uniroute.embed.minilm import MiniLMEmbedder, load_minilm
from uniroute.embed.minilm_onnx import MiniLMOnnxEmbedder, load_minilm_onnx
from uniroute.embed.static import StaticEmbedder, load_static
from uniroute.embed.static_tuned import StaticTunedEmbedder, TeacherVectors, fit_static_tuned
from uniroute.embed.tfidf import TfidfEmbedder, fit_tfidf

log = logging.getLogger(__name__)


AnyEmbedder = MiniLMEmbedder | MiniLMOnnxEmbedder | StaticEmbedder | StaticTunedEmbedder | TfidfEmbedder
# Evaluation only: distilled from an attribute labels file. Not in EMBEDDERS because routers built on it could
# not be stored (embed.portable does not carry its heads yet): `uniroute build` refuses it, and make_embedder
# without labels.
ATTRIBUTES_EMBEDDER = "attributes"


def make_embedder(
    name: str,
    fit_texts: Sequence[str] | None = None,
    seed: int = 0,
    batch_size: int = 128,
    progress: bool = True,
    cache_dir: Path | None = None,
    attribute_labels: np.ndarray | None = None,
    attribute_base: str = "static",
    teacher_vectors: TeacherVectors | None = None,
) -> AnyEmbedder | AttributeEmbedder:
    """The embedder called `name` (one of EMBEDDERS, or "attributes" with labels).

    `minilm-onnx` and `static` build their model file from the local MiniLM into cache_dir the first time
    (`Settings.cache_dir`, passed in by the edges); `tfidf` is fitted on fit_texts. batch_size is MiniLM's
    (sentence-transformers) batch; the ONNX embedder uses its own, smaller, length-sorted batches.
    `attributes` distils heads on the frozen `attribute_base` from fit_texts and their (n, A) attribute_labels.
    `static-tuned` fits the static table to minilm-onnx's vectors of fit_texts, which teacher_vectors gives
    (the store's cache, where the caller has one; else the teacher encodes them here).
    """
    if name == ATTRIBUTES_EMBEDDER:
        if fit_texts is None or attribute_labels is None:
            raise ValueError("the attributes embedder is for evaluation only (`uniroute evaluate --embedder "
                             "attributes --attribute-labels FILE`): routers built on it cannot be stored yet; "
                             f"choose one of {', '.join(EMBEDDERS)}")
        base = make_embedder(attribute_base, fit_texts=fit_texts, seed=seed, batch_size=batch_size,
                             progress=progress, cache_dir=cache_dir)
        return fit_attribute_embedder(base, fit_texts, attribute_labels)
    if name in BUILT_EMBEDDERS and cache_dir is None:
        raise ValueError(f"the {name} embedder builds its model file once into a cache folder: pass cache_dir "
                         "(Settings.cache_dir, under UNIROUTE_HOME)")
    if name == "minilm":
        return load_minilm(batch_size=batch_size, progress=progress)
    built_in = cast(Path, cache_dir)  # given for every built embedder (checked above)
    if name == "minilm-onnx":
        return load_minilm_onnx(built_in, progress=progress)
    if name == "static":
        return load_static(built_in, progress=progress)
    if name == "static-tuned":
        if fit_texts is None:
            raise ValueError("the static-tuned embedder is fitted on prompt texts: pass fit_texts")
        return fit_static_tuned(load_static(built_in, progress=progress),
                                load_minilm_onnx(built_in, progress=progress), fit_texts,
                                teacher_vectors=teacher_vectors, progress=progress)
    if name == "tfidf":
        if fit_texts is None:
            raise ValueError("the tfidf embedder is fitted on the training prompts: pass fit_texts")
        return fit_tfidf(fit_texts, seed=seed, progress=progress)
    raise ValueError(f"unknown embedder {name!r}; known: {', '.join(EMBEDDERS)}")
