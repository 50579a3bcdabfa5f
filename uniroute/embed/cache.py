"""The embedding cache: a text is embedded once per embedder, ever; the vectors are the store's Parquet dataset.

Workers write the vectors (store.embeddings: one file per task, `.part` then renamed) and return only the file's
name, so filling the cache never brings the matrix to the driver (embed_missing). embed_cached reads back the
rows its caller asked for, for the callers that need them in memory.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from uniroute import store
from uniroute.embed.base import Embedder, check_texts
from uniroute.embed.batches import STEP_TEXTS, TASK_TEXTS
from uniroute.errors import UnirouteError
from uniroute.progress import progress_bar
from uniroute.store.embeddings import expose_view, root_of, write_partition

if TYPE_CHECKING:
    from distributed import Client

log = logging.getLogger(__name__)

# Texts per partition file written in-process (one encode call per STEP_TEXTS inside it).
CHUNK_TEXTS = 32_768


def scatter_vectors(out: np.ndarray, positions: pa.ChunkedArray, vectors: pa.ChunkedArray, what: str) -> None:
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


def encode_partition(texts: list[str], hashes: list[str], embedder: Embedder, root: str) -> tuple[str, int]:
    """One task's work: encode the texts and write them as one partition file; (its path, rows). The vectors stay
    on the worker."""
    parts = [embedder.encode(texts[i : i + STEP_TEXTS]) for i in range(0, len(texts), STEP_TEXTS)]
    vectors = np.concatenate(parts, axis=0) if parts else np.zeros((0, embedder.dim), np.float32)  # (b, dim)
    if vectors.shape != (len(texts), embedder.dim):
        raise RuntimeError(f"{embedder.embedder_id} returned {vectors.shape}, expected {(len(texts), embedder.dim)}")
    return write_partition(root, embedder.embedder_id, hashes, vectors), len(texts)


class DaskEmbedError(UnirouteError, RuntimeError):
    """The embedding's Dask tasks could not finish (workers lost beyond Dask's retries, the scheduler gone)."""


def _same(embedder: Embedder) -> Embedder:
    return embedder


def _staged_missing(con: store.Connection, texts: list[str], embedder_id: str) -> tuple[pa.Table, np.ndarray]:
    """Stage the texts' hashes (temp table embedding_wanted) and return (missing rows, which are firsts)."""
    wanted = pa.table({"pos": pa.array(np.arange(len(texts), dtype=np.int64)), "text": pa.array(texts, pa.string())})
    # sha256() in DuckDB is the same hex digest of the UTF-8 bytes as text_hash() (tested).
    with store.registered(con, "wanted_texts", wanted):
        store.execute(con, "embedding_stage_wanted")
    expose_view(con)  # the dataset as it is now: files written since the connection opened included
    missing = store.query_arrow(con, "embedding_missing", embedder_id=embedder_id)
    return missing, missing.column("pos").to_numpy() == missing.column("first_pos").to_numpy()


def _fill(texts: list[str], new_pos: np.ndarray, hashes: list[str], embedder: Embedder, root: str,
          client: Client | None, chunk_texts: int, task_texts: int) -> int:
    """Encode and write the distinct missing texts, on the client's workers or here; the partition files written."""
    shown = embedder.progress and len(new_pos) >= 2
    step = task_texts if client is not None else chunk_texts
    chunks = [(lo, new_pos[lo : lo + step]) for lo in range(0, len(new_pos), step)]
    with progress_bar(len(new_pos), f"embed {embedder.embedder_id}", "prompt", log, enabled=shown) as bar:
        if client is None:
            for lo, chunk in chunks:
                encode_partition([texts[i] for i in chunk], hashes[lo : lo + len(chunk)], embedder, root)
                bar.update(len(chunk))
            return len(chunks)
        run_on_workers(client, encode_partition, [([texts[i] for i in chunk], hashes[lo : lo + len(chunk)], str(lo))
                                                  for lo, chunk in chunks], embedder, root, bar)
        return len(chunks)


def run_on_workers(client: Client, task: Callable[..., tuple[str, int]], calls: Sequence[tuple[Any, Any, str]],
                   embedder: Embedder, root: str, bar: Any) -> None:
    """task(a, b, embedder, root) for each (a, b, name) of calls on the client's workers, each writing one partition
    file; DaskEmbedError naming the first task that failed (the others are cancelled).

    The embedder is a task's result, not scattered data: a worker lost mid-run took scattered data with it and
    every task needing it was cancelled ("already forgotten"), while a task's result is recomputed elsewhere.
    It travels once per worker (a MiniLM pickles without its weights; each worker process loads them once).
    Results are file names and counts: the vectors never come back. Collected in order, each advancing the
    bar, which is the Dask phase's progress in the log.
    """
    run = uuid.uuid4().hex[:8]  # task names the dashboard shows: embed-partition-<run>-<name>
    shared = client.submit(_same, embedder, key=f"embedder-{run}")
    futures = [client.submit(task, a, b, shared, root, key=f"embed-partition-{run}-{name}") for a, b, name in calls]
    for future in futures:
        try:
            _, rows = future.result()
        except Exception as exc:  # KilledWorker, a cancelled future, a lost scheduler: Dask's many ways to fail
            for other in futures:
                other.cancel()
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise DaskEmbedError(
                f"embedding on the Dask cluster failed at task {future.key} ({type(exc).__name__}: {first}); the "
                f"files written so far are kept and a rerun embeds only the rest") from exc
        bar.update(rows)


def embed_missing(
    con: store.Connection,
    texts: Sequence[str],
    embedder: Embedder,
    client: Client | None = None,
    chunk_texts: int = CHUNK_TEXTS,
    task_texts: int = TASK_TEXTS,
) -> tuple[pa.Table, np.ndarray]:
    """Embed the texts the cache lacks for this embedder, writing them to the dataset; (missing rows, firsts).

    Each partition file is final once renamed, so a run killed half-way keeps what it finished and a rerun embeds
    only the rest. The files are a cache keyed by content, outside the session's transaction: a rolled-back
    operation leaves vectors that are right for their texts. With a Dask client each task writes its own file.
    """
    texts = check_texts(texts)
    embedder_id = embedder.embedder_id
    missing, is_first = _staged_missing(con, texts, embedder_id)
    new_pos = missing.column("pos").to_numpy()[is_first]
    hashes = missing.column("text_hash").filter(pa.array(is_first)).to_pylist()
    log.info("embed %s: %d texts, %d cached, %d distinct to embed",
             embedder_id, len(texts), len(texts) - missing.num_rows, len(new_pos))
    if len(new_pos):
        files = _fill(texts, new_pos, hashes, embedder, root_of(con), client, chunk_texts, task_texts)
        log.info("embed %s: %d vectors written in %d partition files", embedder_id, len(new_pos), files)
        expose_view(con)
    return missing, is_first


def embed_cached(
    con: store.Connection,
    texts: Sequence[str],
    embedder: Embedder,
    client: Client | None = None,
    chunk_texts: int = CHUNK_TEXTS,
) -> np.ndarray:
    """(n, dim) float32 vectors of the texts in input order; only texts not cached for this embedder are embedded.

    The cache key is (sha256(text), embedder_id); a text repeated in the input is embedded once. Hashing,
    lookup and de-duplication run inside DuckDB (one join over the Parquet dataset, no per-row queries).
    """
    texts = check_texts(texts)
    out = np.empty((len(texts), embedder.dim), dtype=np.float32)  # (n, dim); every row is written below
    if not texts:
        return out
    embed_missing(con, texts, embedder, client=client, chunk_texts=chunk_texts)
    found = store.query_arrow(con, "embedding_lookup", embedder_id=embedder.embedder_id)
    if found.num_rows != len(texts):
        raise store.StoreError(f"embed {embedder.embedder_id}: {len(texts) - found.num_rows} texts have no vector "
                               f"after embedding (the dataset at {root_of(con)} lost files while this ran)")
    scatter_vectors(out, found.column("pos"), found.column("vector"), embedder.embedder_id)
    return out
