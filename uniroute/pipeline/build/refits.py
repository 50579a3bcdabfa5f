"""The build's K-means refits on every training prompt, started as soon as a kind's K is known.

A build tuned on a sample refits the served one-hot K-means over every training prompt (clusters_dask, on the
Dask workers when it has a cluster). The refit used to start after every kind was tuned and selected, so the
workers sat idle through the driver's K-NN and LearnedMap tuning and then the driver sat idle through the refit
(at 200k x 100: 70 s of refit after 190 s of tuning, benchmarks/scale/dask_plane.py --build). Started on a thread
when the K-means kinds' K is chosen, it runs on the workers while the driver tunes the other kinds. The refit is
deterministic (its seed and rows fixed), so when it runs changes nothing it returns.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

import pyarrow as pa

from uniroute import store
from uniroute.pipeline.build.clusters import fit_training_rows, train_hashes, training_rows
from uniroute.routers.cluster.kmeans import Centroids

if TYPE_CHECKING:
    from distributed import Client


class Refits:
    """K -> K-means on every training prompt, each K fitted once, ahead (`ahead`) or when asked (call)."""

    def __init__(self, con: store.Connection, embedder_id: str, dim: int, seed: int, client: Client | None,
                 stage: Callable[..., None]) -> None:
        self._con, self._embedder_id, self._dim, self._seed, self._client = con, embedder_id, dim, seed, client
        self._stage = stage
        # One thread: refits queue rather than compete for the same workers; the driver's thread stays free.
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="uniroute-refit")
        self._futures: dict[int, Future] = {}
        # The training hashes, read from the store once per build: a second K's read (the hierarchy's 2K beside
        # count-aware K-means' K) came while the driver held the tuning state and was its peak at 1M prompts
        # (+110 MB over the first read; benchmarks/scale/dask_plane.py --build).
        self._hashes: pa.Array | None = None

    @property
    def on_dask(self) -> bool:
        return self._client is not None

    def ahead(self, k: int) -> None:
        """Start the refit with this K on the thread (the store is read here, on the caller's thread)."""
        if k not in self._futures:
            if self._hashes is None:
                self._hashes = train_hashes(self._con)
            rows = training_rows(self._con, self._embedder_id, self._hashes)
            self._futures[k] = self._pool.submit(fit_training_rows, rows, self._dim, k, self._seed, self._client)

    def __call__(self, k: int) -> Centroids:
        # Once per K: K-means and count-aware K-means usually choose the same K, and the refit is deterministic
        # (a second identical refit was a minute of the 200k x 100 build, benchmarks/scale/dask_plane.py).
        if k not in self._futures:
            self._stage(f"K-means (K={k}) on every training prompt's vector in the embedding dataset"
                        f"{' on Dask' if self._client is not None else ''}")
        self.ahead(k)
        return self._futures[k].result()[0]

    def close(self) -> None:
        """Wait for any refit still running (a build that failed while one ran), and end the thread."""
        self._pool.shutdown(wait=True, cancel_futures=True)
