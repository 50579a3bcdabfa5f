"""A build larger than its tuning sample refits the served K-means on every training prompt over the embedding
dataset, on the Dask workers when it has a cluster (the same path as `operations.cluster_on_dask`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from distributed import Client

from tests.dask_cluster import external_cluster
from tests.helpers import ingest
from tests.synthetic_logs import synthetic_long
from uniroute import store
from uniroute.pipeline.build import nightly as build_module
from uniroute.pipeline.build.clusters import fit_dataset
from uniroute.pipeline.pool import registry

pytestmark = pytest.mark.slow


def test_a_sampled_build_refits_kmeans_over_the_dataset_on_the_workers(tmp_path: Path, monkeypatch) -> None:
    db = tmp_path / "uniroute.duckdb"
    synthetic_long(n_prompts=600, n_models=4).to_parquet(tmp_path / "logs.parquet", index=False)
    ingest(db, tmp_path / "logs.parquet", progress=False)
    monkeypatch.setattr(build_module, "TUNING_SAMPLE", 100)  # fewer than the ~360 training prompts: a refit
    cluster = external_cluster(tmp_path, workers=1, threads=1)
    with cluster as running, Client(running.address, set_as_default=False) as client:  # the build passes it on
        with store.opened(db) as con:
            result = build_module.run_build(con, "tfidf", seed=0, kinds=("kmeans",), client=client)
        prefixes = client.run_on_scheduler(lambda dask_scheduler: sorted(dask_scheduler.task_prefixes))
    # The Lloyd sums ran on the worker, over blocks it read from the partition files.
    assert {"rows", "partial"} <= set(prefixes), prefixes
    with store.opened(db, read_only=True) as con:
        router = registry.load_router_version(con, result.router_id).router
        embedder_id = registry.load_router_version(con, result.router_id).router.embedder_id
        dim = router.assigner.centers.shape[1]
        here, n_train = fit_dataset(con, embedder_id, dim, result.k, seed=0)  # in-process, every training row
    assert n_train == result.n_prompts["train"] > build_module.TUNING_SAMPLE
    np.testing.assert_allclose(router.assigner.centers, here.centers, atol=1e-5)


def test_refits_of_two_ks_read_the_training_rows_once_and_each_fits_them_all(tmp_path: Path, monkeypatch) -> None:
    """The hierarchy's 2K is refitted beside count-aware K-means' K: one read of the training hashes serves both,
    each fit gets its own hashes' file (a fit removes its file when done)."""
    from uniroute.pipeline.build import refits as refits_module

    db = tmp_path / "uniroute.duckdb"
    synthetic_long(n_prompts=300, n_models=3).to_parquet(tmp_path / "logs.parquet", index=False)
    ingest(db, tmp_path / "logs.parquet", progress=False)
    reads = []
    real = refits_module.train_hashes
    monkeypatch.setattr(refits_module, "train_hashes", lambda con: reads.append(1) or real(con))
    with store.opened(db) as con:
        result = build_module.run_build(con, "tfidf", seed=0, kinds=("kmeans",))
        router = registry.load_router_version(con, result.router_id).router
        embedder_id, dim = router.embedder_id, router.assigner.centers.shape[1]
        reads.clear()
        refits = refits_module.Refits(con, embedder_id, dim, 0, None, lambda *_: None)
        try:
            refits.ahead(3)
            both = {k: refits(k) for k in (3, 6)}
        finally:
            refits.close()
    assert len(reads) == 1
    with store.opened(db, read_only=True) as con:
        for k, centroids in both.items():
            np.testing.assert_allclose(centroids.centers, fit_dataset(con, embedder_id, dim, k, seed=0)[0].centers,
                                       atol=1e-5)
