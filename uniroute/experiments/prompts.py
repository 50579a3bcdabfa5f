"""What text of each prompt is embedded, and the prompts' embeddings from the store's cache."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

PROMPT_PARTS = ("full", "last-block")


def prompt_texts(prompts: Sequence[str], part: str = "full") -> list[str]:
    """The text of each prompt to embed: all of it, or its last block (after the last blank line).

    `last-block` is for logs whose prompts carry few-shot demonstrations before the question (RouterBench's
    arc-challenge and winogrande): MiniLM reads only the first 256 tokens, which would be the shared
    demonstrations, so every prompt of such a task would embed alike. A prompt without a blank line is kept whole.
    """
    if part not in PROMPT_PARTS:
        raise ValueError(f"unknown prompt part {part!r}; choose from {list(PROMPT_PARTS)}")
    if part == "full":
        return list(prompts)
    out = []
    for text in prompts:
        blocks = [b for b in text.strip().split("\n\n") if b.strip()]
        out.append(blocks[-1].strip() if blocks else text)
    return out


def prompt_embeddings(
    texts: Sequence[str], embedder_name: str, db_path: Path, seed: int, cache_dir: Path | None = None
) -> tuple[np.ndarray, str]:
    """(N, d) float32 embeddings of texts from the store's cache, and the embedder id.

    cache_dir is where the `minilm-onnx` and `static` embedders keep the model file they build once.

    TF-IDF is fitted once per evaluation on the texts of all prompts (no labels are used, so no test
    information leaks into routing; refitting per trial would dominate the run time).
    """
    from uniroute import store
    from uniroute.embed import embed_cached, make_embedder

    fit_texts = list(texts) if embedder_name == "tfidf" else None
    embedder = make_embedder(embedder_name, fit_texts=fit_texts, seed=seed, cache_dir=cache_dir)
    # A cache fill: each chunk commits on its own, so an interrupted run keeps what it embedded.
    with store.session(db_path, "embed", inputs=embedder.embedder_id, atomic=False) as s:
        X = embed_cached(s.con, list(texts), embedder)
    embedder_id = getattr(embedder, "embedder_id", None) or getattr(embedder, "id", None) or embedder_name
    return np.ascontiguousarray(X, dtype=np.float32), str(embedder_id)
