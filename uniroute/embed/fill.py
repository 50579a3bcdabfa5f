"""Fill the embedding cache for every prompt a build reads, with the driver's memory independent of their number.

The texts without a vector go from DuckDB straight into a work Parquet file beside the dataset, one row group per
task (streamed in batches: at 1M prompts holding every text, its hash and each task's list in the driver took
1.4 GB, benchmarks/scale/dask_plane.py); each task reads its row group, encodes it and writes one partition file
(cache.encode_partition). The driver holds one batch of texts at a time and the tasks' futures.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

import fsspec
import pyarrow.parquet as pq

from uniroute import store
from uniroute.embed.base import Embedder
from uniroute.embed.batches import TASK_TEXTS
from uniroute.embed.cache import CHUNK_TEXTS, encode_partition, run_on_workers
from uniroute.progress import progress_bar
from uniroute.store.embeddings import expose_view, root_of

if TYPE_CHECKING:
    from distributed import Client

log = logging.getLogger(__name__)

# Row groups per batch read from DuckDB while the work file is written (a batch of texts is what the driver holds).
GROUPS_PER_BATCH = 16
# DuckDB's memory while it finds the missing texts (an anti-join of the prompts against the dataset's hashes).
FILL_DUCKDB_MEMORY = "512MB"


@dataclass(frozen=True)
class Embedded:
    """What a fill made sure of: every prompt a build read when it ran had a vector of embedder_id in the dataset.
    digest: build_prompt_digest over those prompts (their count, the xor and the sum of their text hashes' 64-bit
    hashes); a build whose own prompts have the same digest knows the fill covered exactly them
    (build_data.embed_prompts) and need not look them up again (46 s of DuckDB at 1M prompts)."""

    embedder_id: str
    prompts: int
    digest: tuple[int, int, int]


def _write_work(con: store.Connection, embedder_id: str, url: str, group_rows: int) -> int:
    """The missing (text_hash, text) rows written to url in row groups of group_rows; how many."""
    fs, path = fsspec.core.url_to_fs(url)
    fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
    rows, writer = 0, None
    with store.memory_limited(con, FILL_DUCKDB_MEMORY), fs.open(path, "wb") as f:
        try:
            for batch in store.query_batches(con, "embedding_missing_prompts", group_rows * GROUPS_PER_BATCH,
                                             embedder_id=embedder_id):
                if writer is None:
                    writer = pq.ParquetWriter(f, batch.schema)
                writer.write_batch(batch, row_group_size=group_rows)
                rows += batch.num_rows
        finally:
            if writer is not None:
                writer.close()
    return rows


def encode_row_group(url: str, group: int, embedder: Embedder, root: str) -> tuple[str, int]:
    """One task's work: row group `group` of the work file encoded and written as one partition; (its path, rows)."""
    with fsspec.open(url, "rb") as f:
        table = pq.ParquetFile(f).read_row_group(group)
    return encode_partition(table.column("text").to_pylist(), table.column("text_hash").to_pylist(), embedder, root)


def embed_store_prompts(con: store.Connection, embedder: Embedder, client: Client | None = None) -> Embedded:
    """Embed every prompt a build reads that the dataset lacks (on the client's workers when given); what was made
    sure of. Each partition file is final once renamed: a run killed half-way keeps what it finished."""
    expose_view(con)  # the dataset as it is now
    root = root_of(con)
    fs, base = fsspec.core.url_to_fs(root)
    work = f"{base}/work/embed-{uuid.uuid4().hex}.parquet"
    url = work if "://" not in root else fs.unstrip_protocol(work)
    # Capped too: uncapped (DuckDB's default, 80% of RAM) this count over 20M results took the driver to 1.6 GB.
    with store.memory_limited(con, FILL_DUCKDB_MEMORY):
        count, xor, total = (int(v) for v in store.query_arrow(con, "build_prompt_digest").to_pylist()[0].values())
        digest = (count, xor, total)
    n_prompts = digest[0]
    try:
        missing = _write_work(con, embedder.embedder_id, url, TASK_TEXTS if client is not None else CHUNK_TEXTS)
        log.info("embed %s: %d prompts, %d distinct to embed", embedder.embedder_id, n_prompts, missing)
        if missing:
            with fs.open(work, "rb") as f:
                groups = pq.ParquetFile(f).num_row_groups
            _run(url, groups, missing, embedder, root, client)
            log.info("embed %s: %d vectors written in %d partition files", embedder.embedder_id, missing, groups)
            expose_view(con)
    finally:
        if fs.exists(work):
            fs.rm(work)
    return Embedded(embedder.embedder_id, n_prompts, digest)


def _run(url: str, groups: int, rows: int, embedder: Embedder, root: str, client: Client | None) -> None:
    shown = embedder.progress and rows >= 2
    with progress_bar(rows, f"embed {embedder.embedder_id}", "prompt", log, enabled=shown) as bar:
        if client is None:
            for group in range(groups):
                bar.update(encode_row_group(url, group, embedder, root)[1])
            return
        run_on_workers(client, encode_row_group, [(url, group, str(group)) for group in range(groups)], embedder,
                       root, bar)
