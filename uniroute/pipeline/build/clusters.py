"""Prompt clusters computed where the embeddings live: K-means over the training prompts' Parquet partitions on the
Dask workers, and every cached prompt's cluster written back as a dataset beside them.

The driver holds the training prompts' text hashes (written once as a small Parquet file the workers read, one
copy per worker process) and K x d centres; the workers read their partition files, keep the training rows, run
the Lloyd sums (routers.cluster.kmeans_dask) and write `<root>/assignments/<clustering_id>/part-*.parquet` (text_hash,
cluster), one file per embedding partition, `.part` then renamed like the embeddings.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

import dask
import dask.array as da
import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from uniroute import store
from uniroute.routers.cluster.kmeans import Centroids, clustering_id_of
from uniroute.routers.cluster.kmeans_dask import fit_centroids_dask
from uniroute.store.embeddings import partition_files, register_filesystem, root_of

if TYPE_CHECKING:
    from distributed import Client

log = logging.getLogger(__name__)

# Embedding partitions (2,048 prompts each from the workers) per block of the K-means array: a Lloyd step is one
# task per block, and on a busy cluster the per-task overhead, not the arithmetic, set the pace of 1-file blocks.
FILES_PER_BLOCK = 8
# DuckDB's memory while it lists the training hashes (its default, 80% of RAM, kept what it read in the driver).
QUERY_DUCKDB_MEMORY = "512MB"


@dataclass(frozen=True)
class DatasetClusters:
    """What clustering the dataset gave: the centres, their id, the cluster sizes over every cached prompt."""

    centroids: Centroids
    clustering_id: str
    n_train: int
    sizes: np.ndarray  # (K,) prompts per cluster over every vector of the embedder
    assignments_url: str
    seconds: dict[str, float]

    def line(self) -> str:
        return (f"{self.clustering_id}: K={self.centroids.k} fitted on {self.n_train:,} training prompts on Dask, "
                f"{int(self.sizes.sum()):,} prompts assigned to {self.assignments_url}")


@functools.lru_cache(maxsize=4)
def _keep(url: str) -> frozenset[str]:
    """The training hashes a task keeps (read once per worker process: every task of a fit asks for the same file).

    A Python set, built once: pyarrow's is_in rebuilt its hash table of the value set on every call, 0.1 s per
    partition at 120k training prompts and most of the clustering's time at 1M (benchmarks/scale/dask_plane.py)."""
    with fsspec.open(url, "rb") as f:
        return frozenset(pq.read_table(f).column("text_hash").to_pylist())


def _read(path: str, keep_url: str | None) -> pa.Table:
    with fsspec.open(path, "rb") as f:
        table = pq.read_table(f, columns=["text_hash", "vector"])
    if keep_url is not None:
        keep = _keep(keep_url)
        table = table.filter(pa.array([h in keep for h in table.column("text_hash").to_pylist()], pa.bool_()))
    return table


def _vectors(table: pa.Table, dim: int) -> np.ndarray:
    flat = table.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False)
    return flat.astype(np.float32, copy=False).reshape(table.num_rows, dim)


def _rows(paths: list[str], keep_url: str, dim: int) -> np.ndarray:
    """A group of partitions' training rows (b, dim) float32: a block of the Dask array, read on a worker."""
    return np.concatenate([_vectors(_read(p, keep_url), dim) for p in paths])


def _assign_partition(path: str, centers: np.ndarray, out_folder: str) -> np.ndarray:
    """Every row of one partition assigned to its nearest centre and written as one file; (K,) cluster sizes."""
    table = _read(path, None)
    centroids = Centroids(centers=centers)
    clusters = centroids.assign(_vectors(table, centroids.dim)) if table.num_rows else np.zeros(0, np.int64)
    fs, folder = fsspec.core.url_to_fs(out_folder)
    fs.makedirs(folder, exist_ok=True)
    final = f"{folder}/{path.rsplit('/', 1)[-1]}"
    partial = f"{final}.{uuid.uuid4().hex[:8]}.part"
    with fs.open(partial, "wb") as f:
        pq.write_table(pa.table({"text_hash": table.column("text_hash"),
                                 "cluster": pa.array(clusters.astype(np.int32))}), f)
    fs.mv(partial, final)
    return np.bincount(clusters, minlength=centroids.k)


def _write_keep(root: str, hashes: pa.Array) -> str:
    fs, base = fsspec.core.url_to_fs(root)
    folder = f"{base}/work"
    fs.makedirs(folder, exist_ok=True)
    name = f"{folder}/train-{uuid.uuid4().hex}.parquet"
    with fs.open(f"{name}.part", "wb") as f:
        pq.write_table(pa.table({"text_hash": hashes}), f)
    fs.mv(f"{name}.part", name)
    return name if "://" not in root else fs.unstrip_protocol(name)


def training_array(files: list[str], keep_url: str, dim: int, client: Client | None,
                   files_per_block: int = FILES_PER_BLOCK) -> da.Array:
    """The training rows of every partition as one Dask array (n_train, dim), blocks of files_per_block partitions
    read once: with a client on the workers and kept in their memory (the driver learns each block's row count
    only), without one in this process (small data)."""
    groups = [files[i : i + files_per_block] for i in range(0, len(files), files_per_block)]
    if client is None:
        arrays = dask.compute(*[dask.delayed(_rows)(g, keep_url, dim) for g in groups])
        blocks = [da.from_array(a, chunks=a.shape) for a in arrays if len(a)]
    else:
        # One read: the blocks are read into the workers' memory and only their lengths come back (a first pass
        # that counted rows read every file twice).
        futures = [client.submit(_rows, g, keep_url, dim, pure=False) for g in groups]
        counts = client.gather([client.submit(len, f) for f in futures])
        blocks = [da.from_delayed(f, shape=(n, dim), dtype=np.float32)
                  for f, n in zip(futures, counts, strict=True) if n]
    if not blocks:
        raise store.StoreError("no training prompt has a vector in the embedding dataset: embed them first")
    return da.concatenate(blocks)


def _scheduler(client: Client | None) -> contextlib.AbstractContextManager:
    """Every dask.compute inside on the client's cluster, even when it is not the process's default client (the
    blocks are its futures: the local scheduler cannot see them); without one, as dask's configuration says."""
    return dask.config.set(scheduler=client) if client is not None else contextlib.nullcontext()


@dataclass(frozen=True)
class TrainingRows:
    """What a K-means fit over the dataset reads: the embedder's partition files and the training hashes' file."""

    root: str
    files: list[str]
    keep_url: str


def train_hashes(con: store.Connection) -> pa.Array:
    """The training prompts' text hashes. On the caller's connection: the build's split may be uncommitted, so
    another connection would not see it."""
    with store.memory_limited(con, QUERY_DUCKDB_MEMORY):
        return store.query_arrow(con, "train_text_hashes").column("text_hash").combine_chunks()


def training_rows(con: store.Connection, embedder_id: str, hashes: pa.Array | None = None) -> TrainingRows:
    """The training prompts of one embedder as the workers will read them (the hashes, read here unless given,
    written once as a file)."""
    root = root_of(con)
    files = partition_files(root, embedder_id)
    return TrainingRows(root, files, _write_keep(root, train_hashes(con) if hashes is None else hashes))


def fit_training_rows(rows: TrainingRows, dim: int, k: int, seed: int,
                      client: Client | None = None) -> tuple[Centroids, int]:
    """K-means (K = k) over these training rows, the Lloyd sums on the client's workers (in this process without
    one); (the centres, how many training rows). Touches no store connection: it may run on a thread of its own
    while the build tunes (build_refits). The hashes' file is removed after."""
    try:
        with _scheduler(client):
            X = training_array(rows.files, rows.keep_url, dim, client)
            return fit_centroids_dask(X, k, seed), int(X.shape[0])
    finally:
        fs, keep_path = fsspec.core.url_to_fs(rows.keep_url)
        fs.rm(keep_path)


def fit_dataset(con: store.Connection, embedder_id: str, dim: int, k: int, seed: int,
                client: Client | None = None) -> tuple[Centroids, int]:
    """K-means (K = k) over the training prompts' vectors of one embedder in the dataset, the Lloyd sums on the
    client's workers (in this process without one); (the centres, how many training rows)."""
    return fit_training_rows(training_rows(con, embedder_id), dim, k, seed, client)


def assign_partitions(con: store.Connection, embedder_id: str, centroids: Centroids, clustering_id: str,
                      client: Client | None = None) -> tuple[str, np.ndarray]:
    """Every vector of the embedder assigned to its nearest centre, one file per partition written by the task that
    read it (on the client's workers; in this process without one); (the files' folder, (K,) cluster sizes)."""
    root = root_of(con)
    out = f"{root}/assignments/{clustering_id}"
    centers = dask.delayed(centroids.centers, name=f"centers-{clustering_id}")
    files = partition_files(root, embedder_id)
    with _scheduler(client):
        sizes = np.sum(dask.compute(*[dask.delayed(_assign_partition)(p, centers, out) for p in files]), axis=0)
    return out, np.asarray(sizes)


def store_assignments(con: store.Connection, embedder_id: str, centroids: Centroids, clustering_id: str,
                      client: Client | None = None) -> int:
    """Each build prompt's cluster under a clustering written to `cluster_assignments` from the assignment files the
    workers wrote (assign_partitions): DuckDB joins them to the prompts by text hash, so the driver holds neither
    the vectors nor the clusters. Once per clustering (an identical rebuild reuses the stored rows); the rows."""
    if bool(store.query(con, "assignments_exist", clustering_id=clustering_id).iloc[0, 0]):
        return 0
    out, _ = assign_partitions(con, embedder_id, centroids, clustering_id, client)
    glob = f"{out}/*.parquet".replace(chr(39), chr(39) * 2)  # the project's own path: read_parquet binds no parameter
    register_filesystem(con)
    con.execute(f"create or replace temp view assigned as select text_hash, cluster from read_parquet('{glob}')")
    try:
        store.execute(con, "assignments_from_dataset", clustering_id=clustering_id)
    finally:
        con.execute("drop view if exists assigned")
    # Both count(*): one row each.
    written = int(store.query_row(con, "assignments_count", clustering_id=clustering_id)[0])  # type: ignore[index]
    expected = int(store.query_row(con, "build_prompt_count")[0])  # type: ignore[index]
    if written != expected:
        raise store.StoreError(f"{clustering_id}: {expected - written} of {expected} build prompts have no cluster in "
                               f"{out} (their vectors are missing from the embedding dataset)")
    return written


def cluster_dataset(con: store.Connection, embedder_id: str, dim: int, k: int, seed: int,
                    client: Client | None = None) -> DatasetClusters:
    """K-means (K = k) over the training prompts' vectors of one embedder, fitted and assigned on the workers."""
    t0 = time.perf_counter()
    centroids, n_train = fit_dataset(con, embedder_id, dim, k, seed, client)
    seconds = {"fit": time.perf_counter() - t0}
    clustering_id = clustering_id_of(centroids)
    out, sizes = assign_partitions(con, embedder_id, centroids, clustering_id, client)
    seconds["assign"] = time.perf_counter() - t0 - seconds["fit"]
    result = DatasetClusters(centroids, clustering_id, n_train, sizes, out, seconds)
    log.info(result.line())
    return result
