"""The embedding cache as a partitioned Parquet dataset, and the `embeddings` view the store shows over it.

Vectors are large data: at a million prompts they outweigh the rest of the store, and the workers that compute
them must write them without passing them through the driver or DuckDB's single writer. So they live as Parquet
files, one per Dask task, under `<root>/<embedder folder>/part-<content hash>.parquet`, where root is
UNIROUTE_EMBEDDINGS_URL (any fsspec location every worker reaches: a shared folder, an object store) or
`embeddings/` beside the store file. A file is written as `NAME.part` and renamed, so a reader never sees half of
one; its name is a hash of the text hashes it holds, so a task Dask runs twice (a worker lost after the rename)
rewrites the same file instead of adding a duplicate. The dataset is the only copy (no table in the store file);
SQL sees it through a temporary view each connection creates (user SQL too: the sandbox allows that one folder).
"""

from __future__ import annotations

import hashlib
import os
import re
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from uniroute.store.schema import SQL_DIR

ENV_URL = "UNIROUTE_EMBEDDINGS_URL"
VIEW = "embeddings"
LEGACY_TABLE = "embeddings_unexported"  # sql/migrations/005: the table a store before version 5 kept vectors in
EXPORT_ROWS = 65_536  # vectors per Parquet file when a legacy table is exported
# Columns of every partition file; the view adds nothing, so a user reads what the workers wrote.
SCHEMA = pa.schema([("text_hash", pa.string()), ("embedder_id", pa.string()), ("dim", pa.int32()),
                    ("vector", pa.list_(pa.float32())), ("created_at", pa.timestamp("us"))])
_EMPTY_VIEW = (f"create or replace temp view {VIEW} as select ''::varchar as text_hash, ''::varchar as embedder_id, "
               "0::integer as dim, []::float[] as vector, now()::timestamp as created_at limit 0")


def embeddings_root(db_path: Path) -> str:
    """Where a store's vectors live: UNIROUTE_EMBEDDINGS_URL, or `embeddings/` beside the store file (absolute,
    since workers may run in other folders)."""
    url = os.environ.get(ENV_URL, "").strip()
    if url:
        return url.rstrip("/")
    return str(Path(db_path).resolve().parent / "embeddings")


def store_path(con: duckdb.DuckDBPyConnection) -> Path | None:
    """The file a connection has open (None for an in-memory database)."""
    rows = con.execute("select path from duckdb_databases() where database_name = current_database()").fetchall()
    return Path(rows[0][0]) if rows and rows[0][0] else None


def root_of(con: duckdb.DuckDBPyConnection) -> str:
    """The dataset root of the store a connection has open; a folder under the working one for an in-memory one."""
    path = store_path(con)
    return embeddings_root(path if path is not None else Path(".uniroute") / "memory.duckdb")


def embedder_folder(embedder_id: str) -> str:
    """A file-name-safe folder for an embedder id (ids hold ':' '@' '/'), unique by a hash of the id."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", embedder_id)[:60]
    return f"embedder-{safe}-{hashlib.sha256(embedder_id.encode()).hexdigest()[:10]}"


def _filesystem(root: str) -> tuple[fsspec.AbstractFileSystem, str]:
    return fsspec.core.url_to_fs(root)


def _local(root: str) -> bool:
    fs, _ = _filesystem(root)
    return "file" in (fs.protocol if isinstance(fs.protocol, tuple) else (fs.protocol,))


def partition_files(root: str, embedder_id: str | None = None) -> list[str]:
    """The finished partition files (of one embedder, or all), as paths DuckDB reads."""
    fs, base = _filesystem(root)
    pattern = f"{base}/{embedder_folder(embedder_id) if embedder_id else 'embedder-*'}/*.parquet"
    found = sorted(fs.glob(pattern))
    return found if _local(root) else [fs.unstrip_protocol(p) for p in found]


def _glob(root: str, embedder_id: str | None) -> str:
    folder = embedder_folder(embedder_id) if embedder_id else "embedder-*"  # other datasets live beside them
    return f"{root}/{folder}/*.parquet"


def source_sql(con: duckdb.DuckDBPyConnection, embedder_id: str | None = None) -> str:
    """A FROM item over the dataset (one embedder's folder, or all), or an empty relation when it has no file.

    The glob is the project's own path, never a user's value; read_parquet takes no bound parameter."""
    root = root_of(con)
    if not partition_files(root, embedder_id):
        return f"({_EMPTY_VIEW.split(' as ', 1)[1]})"
    return f"read_parquet('{_glob(root, embedder_id).replace(chr(39), chr(39) * 2)}')"


def expose_view(con: duckdb.DuckDBPyConnection) -> None:
    """(Re)create the connection's `embeddings` view over the dataset as it is now; skipped on a store not yet
    migrated (its `embeddings` table is still the cache)."""
    tables = {r[0] for r in con.execute(
        "select table_name from information_schema.tables where table_schema = 'main' "
        "and table_catalog = current_database()").fetchall()}
    if VIEW not in tables:
        register_filesystem(con)
        con.execute(f"create or replace temp view {VIEW} as select * from {source_sql(con)}")
    # Views that read the embeddings are per-connection too (a view stored in the file cannot name a temp view).
    # A connection to a file without the pipeline's tables (a sandbox test's, a store not yet created) has no
    # traffic to show: such a view is left out, not an error.
    for view in sorted((SQL_DIR / "connection").glob("*.sql")):
        try:
            con.execute(view.read_text())
        except duckdb.CatalogException:
            continue


def register_filesystem(con: duckdb.DuckDBPyConnection) -> None:
    """Let DuckDB read a non-local root through fsspec (local folders it reads itself)."""
    root = root_of(con)
    if _local(root):
        return
    fs, _ = _filesystem(root)
    if not con.filesystem_is_registered(fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]):
        con.register_filesystem(fs)


def allowed_directory(db_path: Path) -> str | None:
    """The folder a sandboxed connection may read Parquet from (the local dataset root), or None."""
    root = embeddings_root(db_path)
    return (root.rstrip("/") + "/") if _local(root) else None


def write_partition(root: str, embedder_id: str, hashes: list[str], vectors: np.ndarray) -> str:
    """Write one partition file atomically (NAME.part, then renamed); its path. Runs on a worker or in-process."""
    n, dim = vectors.shape
    if len(hashes) != n:
        raise ValueError(f"{len(hashes)} hashes for {n} vectors")
    offsets = pa.array(np.arange(0, (n + 1) * dim, dim, dtype=np.int32))
    values = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1))
    now = datetime.now(UTC).replace(tzinfo=None)
    table = pa.table({
        "text_hash": pa.array(hashes, pa.string()), "embedder_id": pa.array([embedder_id] * n, pa.string()),
        "dim": pa.array(np.full(n, dim, dtype=np.int32)), "vector": pa.ListArray.from_arrays(offsets, values),
        "created_at": pa.array([now] * n, pa.timestamp("us")),
    }, schema=SCHEMA)
    fs, base = _filesystem(root)
    folder = f"{base}/{embedder_folder(embedder_id)}"
    fs.makedirs(folder, exist_ok=True)
    name = hashlib.sha256("\n".join(hashes).encode()).hexdigest()[:32]
    final = f"{folder}/part-{name}.parquet"
    partial = f"{final}.{uuid.uuid4().hex[:8]}.part"  # unique: a rerun of the same task never shares it
    with fs.open(partial, "wb") as f:
        # No dictionary and no statistics for the vectors: dictionary-encoding 2,048 x 256 distinct floats was
        # most of the write (0.125 s of 0.13 s a partition; now 0.02 s) and made the file larger (2.5 MB, now 1.9)
        # and slower to read back (3x) for the K-means (benchmarks/scale/dask_plane.py).
        pq.write_table(table, f, compression="zstd", use_dictionary=["embedder_id", "dim", "created_at"],
                       write_statistics=["text_hash", "embedder_id", "dim", "created_at"])
    fs.mv(partial, final)
    return final


def _legacy_batches(con: duckdb.DuckDBPyConnection) -> Iterator[pa.RecordBatch]:
    yield from con.sql((SQL_DIR / "queries" / "embedding_legacy_rows.sql").read_text()).to_arrow_reader(EXPORT_ROWS)


def export_legacy(con: duckdb.DuckDBPyConnection) -> int:
    """Move the vectors of a store before version 5 (renamed by sql/migrations/005) into the dataset, then drop the
    table; the vectors moved. Idempotent if killed half-way: the same rows give the same file names on the rerun."""
    if not con.execute("select count(*) from information_schema.tables where table_name = $t "
                       "and table_catalog = current_database()", {"t": LEGACY_TABLE}).fetchall()[0][0]:
        return 0
    root, moved = root_of(con), 0
    for batch in _legacy_batches(con):
        for embedder_id in batch.column("embedder_id").unique().to_pylist():
            part = batch.filter(pc.equal(batch.column("embedder_id"), embedder_id))
            dim = int(part.column("dim")[0].as_py())
            flat = part.column("vector").flatten().to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
            write_partition(root, embedder_id, part.column("text_hash").to_pylist(), flat.reshape(part.num_rows, dim))
            moved += part.num_rows
    con.execute(f"drop table {LEGACY_TABLE}")
    return moved
