"""Texts cut into batches and encoded in-process (with a progress bar) or on Dask workers."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from uniroute.embed.base import Embedder, check_texts
from uniroute.progress import progress_bar

if TYPE_CHECKING:
    from distributed import Client

log = logging.getLogger(__name__)

# Texts per encode call in-process: one progress-bar step. Large enough that the length sorting inside
# SentenceTransformer.encode still packs its 128-text batches well, small enough that the bar moves.
STEP_TEXTS = 512
# Texts per Dask task: coarse, since each task has a fixed scheduling cost.
TASK_TEXTS = 2048


def text_batches(texts: Sequence[str], batch_size: int = TASK_TEXTS) -> list[list[str]]:
    """The texts cut into consecutive lists of at most batch_size (the unit of work of a Dask task)."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    texts = list(texts)
    return [texts[i : i + batch_size] for i in range(0, len(texts), batch_size)]


def _encode_batch(texts: list[str], embedder: Embedder) -> np.ndarray:
    """One task's work: (len(texts), dim) float32."""
    return embedder.encode(texts)


def embed_batches(
    texts: Sequence[str],
    embedder: Embedder,
    batch_size: int | None = None,
    client: Client | None = None,
    bar: Any = None,
) -> np.ndarray:
    """(n, dim) float32 vectors of the texts, in order, encoded batch by batch (on Dask workers if a client).

    batch_size defaults to TASK_TEXTS with a client, STEP_TEXTS without. `bar` is a tqdm bar to advance
    (embed_cached passes one spanning all its chunks); without one, a bar is shown if embedder.progress.
    """
    texts = check_texts(texts)
    batches = text_batches(texts, batch_size or (TASK_TEXTS if client is not None else STEP_TEXTS))
    if not batches:
        return np.zeros((0, embedder.dim), dtype=np.float32)
    if client is not None:
        # The embedder is shipped once per worker; a MiniLM embedder pickles without its weights and each
        # worker process loads them once (module-level cache). Progress shows on the Dask dashboard.
        shared = client.scatter(embedder, broadcast=True)
        futures = client.map(_encode_batch, batches, embedder=shared, pure=False)
        parts = client.gather(futures)
        if bar is not None:
            bar.update(len(texts))
    else:

        own = bar is None
        if own:
            bar = progress_bar(len(texts), "embed", "prompt", log, enabled=embedder.progress and len(batches) >= 2)
        parts = []
        try:
            for batch in batches:
                parts.append(_encode_batch(batch, embedder))
                bar.update(len(batch))
        finally:
            if own:
                bar.close()
    vectors = np.concatenate(parts, axis=0)
    if vectors.shape != (len(texts), embedder.dim):
        raise RuntimeError(f"{embedder.embedder_id} returned {vectors.shape}, expected {(len(texts), embedder.dim)}")
    return vectors
