"""The embedding cache in the store: a text is embedded once per embedder, ever."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from uniroute import store
from uniroute.embed.base import Embedder, check_texts
from uniroute.embed.batches import embed_batches
from uniroute.progress import progress_bar

if TYPE_CHECKING:
    from distributed import Client

log = logging.getLogger(__name__)

# Texts per cache write (one transaction each) in embed_cached.
CHUNK_TEXTS = 32_768


def _scatter_vectors(out: np.ndarray, positions: pa.ChunkedArray, vectors: pa.ChunkedArray, what: str) -> None:
    """Write Arrow list<float> rows into out[positions] (out is (n, dim)), chunk by chunk, one copy each."""
    dim = out.shape[1]
    for pos_chunk, chunk in zip(positions.chunks, vectors.chunks, strict=True):
        if len(chunk) == 0:
            continue
        lengths = pc.list_value_length(chunk).to_numpy(zero_copy_only=False)
        if (lengths != dim).any():
            bad = int(np.flatnonzero(lengths != dim)[0])
            raise store.StoreError(f"{what}: a cached vector has length {lengths[bad]}, expected {dim}")
        flat = chunk.flatten().to_numpy(zero_copy_only=False)  # (len(chunk) * dim,) float32, no copy
        out[pos_chunk.to_numpy()] = flat.reshape(len(chunk), dim)


def _lists_from_vectors(vectors: np.ndarray) -> pa.ListArray:
    """An Arrow list<float> column from (n, dim) float32 rows (zero-copy values, computed offsets)."""
    n, dim = vectors.shape
    offsets = pa.array(np.arange(0, (n + 1) * dim, dim, dtype=np.int64))
    values = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1))
    return pa.LargeListArray.from_arrays(offsets, values)


def _store_vectors(con: store.Connection, hashes: pa.Array, vectors: np.ndarray, embedder_id: str) -> None:
    """Add (hash, vector) rows of one embedder to the cache in one statement (present keys are skipped)."""
    new = pa.table({"text_hash": hashes, "vector": _lists_from_vectors(vectors)})
    with store.registered(con, "new_embeddings", new):
        store.execute(con, "embedding_insert", embedder_id=embedder_id, dim=int(vectors.shape[1]))


def embed_cached(
    con: store.Connection,
    texts: Sequence[str],
    embedder: Embedder,
    client: Client | None = None,
    chunk_texts: int = CHUNK_TEXTS,
) -> np.ndarray:
    """(n, dim) float32 vectors of the texts in input order; only texts not cached for this embedder are embedded.

    The cache key is (sha256(text), embedder_id); a text repeated in the input is embedded once. Hashing,
    lookup and de-duplication run inside DuckDB on a registered Arrow table (one join, no per-row queries):
    about 2 s for 350k cached 384-d vectors, most of it moving the vectors out. New vectors are written chunk
    by chunk, one statement each: in a session opened with atomic=False each chunk commits on its own, so a run
    killed half-way keeps what it finished (every cached row is final) and a rerun embeds only the rest; inside
    an operation's transaction they commit with it. With a Dask client the batches run on its workers.
    """
    texts = check_texts(texts)
    dim, embedder_id = embedder.dim, embedder.embedder_id
    out = np.empty((len(texts), dim), dtype=np.float32)  # (n, dim); every row is written below
    if not texts:
        return out
    wanted = pa.table({"pos": pa.array(np.arange(len(texts), dtype=np.int64)), "text": pa.array(texts, pa.string())})
    # sha256() in DuckDB is the same hex digest of the UTF-8 bytes as text_hash() (tested).
    with store.registered(con, "wanted_texts", wanted):
        store.execute(con, "embedding_stage_wanted")
    found = store.query_arrow(con, "embedding_lookup", embedder_id=embedder_id)
    _scatter_vectors(out, found.column("pos"), found.column("vector"), embedder_id)
    # Every input position without a vector, with the first position holding the same text.
    missing = store.query_arrow(con, "embedding_missing", embedder_id=embedder_id)
    pos = missing.column("pos").to_numpy()
    first_pos = missing.column("first_pos").to_numpy()
    is_first = pos == first_pos
    new_pos = pos[is_first]
    new_hashes = missing.column("text_hash").filter(pa.array(is_first))
    log.info(
        "embed %s: %d texts, %d cached, %d distinct to embed",
        embedder_id, len(texts), found.num_rows, len(new_pos),
    )

    shown = embedder.progress and len(new_pos) >= 2
    with progress_bar(len(new_pos), f"embed {embedder_id}", "prompt", log, enabled=shown) as bar:
        for lo in range(0, len(new_pos), chunk_texts):
            chunk = new_pos[lo : lo + chunk_texts]
            vectors = embed_batches([texts[i] for i in chunk], embedder, client=client, bar=bar)  # (b, dim)
            _store_vectors(con, new_hashes.slice(lo, len(chunk)), vectors, embedder_id)
            out[chunk] = vectors
    if len(pos) > len(new_pos):  # repeats of a newly embedded text take the vector of its first occurrence
        out[pos[~is_first]] = out[first_pos[~is_first]]
    return out
