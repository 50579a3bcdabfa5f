"""K-means on Dask (uniroute/routers/cluster/kmeans_dask.py) gives the in-process router on data that fits: the same
centres within tolerance and the same Psi, with the Lloyd sums computed on a real distributed cluster's workers."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest
from distributed import Client, LocalCluster

from uniroute.routers.cluster.kmeans import fit_centroids
from uniroute.routers.cluster.kmeans_dask import assign_blocks, fit_centroids_dask
from uniroute.routers.cluster.psi import psi_from_losses


def _prompts(n: int = 3000, d: int = 16, k: int = 6, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Unit-norm rows around k directions (as embeddings are), and (n, 4) losses that depend on the direction."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(k, d))
    topic = rng.integers(0, k, size=n)
    X = centres[topic] + 0.6 * rng.normal(size=(n, d))
    X = (X / np.linalg.norm(X, axis=1, keepdims=True)).astype(np.float32)
    losses = (rng.random((n, 4)) < (topic[:, None] + np.arange(4)) % 3 / 3).astype(np.float64)
    return X, losses


@pytest.fixture(scope="module")
def client():
    """Two worker processes with one thread each: the sums run in other processes than the test's."""
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as c:
        yield c


def test_the_same_centres_and_psi_as_in_process(client):
    X, losses = _prompts()
    models = ["a", "b", "c", "d"]
    for k in (4, 8):
        here = fit_centroids(X, k, seed=0)
        there = fit_centroids_dask(da.from_array(X, chunks=(500, -1)), k, seed=0)
        np.testing.assert_allclose(there.centers, here.centers, atol=1e-4)
        a = psi_from_losses(here.assign(X), losses, k, models)
        b = psi_from_losses(there.assign(X), losses, k, models)
        np.testing.assert_array_equal(a.values, b.values)
    tasks = client.run_on_scheduler(lambda dask_scheduler: sorted(dask_scheduler.task_prefixes))
    assert "partial" in tasks and "add" in tasks  # the Lloyd sums ran on the cluster, added there


def test_assignments_are_computed_per_block(client):
    X, _ = _prompts(n=1200)
    centroids = fit_centroids(X, 5, seed=1)
    parts = client.compute(assign_blocks(da.from_array(X, chunks=(300, -1)), centroids), sync=True)
    np.testing.assert_array_equal(np.concatenate(parts), centroids.assign(X))


def test_a_sample_seeds_large_inputs_and_refuses_too_many_clusters():
    X, _ = _prompts(n=2000)
    c = fit_centroids_dask(da.from_array(X, chunks=(400, -1)), 6, seed=0, init_sample=500)
    assert c.k == 6 and np.isfinite(c.centers).all()
    with pytest.raises(ValueError, match="k=9 clusters on 8 prompts"):
        fit_centroids_dask(da.from_array(X[:8], chunks=(4, -1)), 9, seed=0)
