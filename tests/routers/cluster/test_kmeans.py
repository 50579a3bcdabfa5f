import dask.array as da
import numpy as np
import pytest

from uniroute.routers.cluster import kmeans as cluster
from uniroute.routers.cluster.kmeans import Centroids, fit_centroids
from uniroute.routers.cluster.kmeans_dask import fit_centroids_dask


def _blobs(seed: int = 0, per: int = 40) -> tuple[np.ndarray, np.ndarray]:
    """Three tight, well-separated blobs in 4-d around known centres."""
    rng = np.random.default_rng(seed)
    centres = np.array([[5, 0, 0, 0], [0, 5, 0, 0], [0, 0, 5, 0]], dtype=np.float32)
    labels = np.repeat(np.arange(3), per)
    X = centres[labels] + rng.normal(scale=0.1, size=(3 * per, 4)).astype(np.float32)
    return X, labels


def test_assign_picks_nearest_centre_by_hand():
    c = Centroids(centers=np.array([[1, 0], [0, 1], [-1, 0]], dtype=np.float32))
    X = np.array([[0.9, 0.1], [0.2, 0.8], [-0.6, -0.3], [0.1, -0.9]], dtype=np.float32)
    # (0.1, -0.9): distances^2 to the centres are 0.81+0.81, 0.01+3.61, 1.21+0.81 -> centre 0.
    assert c.assign(X).tolist() == [0, 1, 2, 0]
    assert c.assign(X).dtype == np.int64
    assert c.k == 3
    m = c.membership(X)
    assert m.dtype == np.float32 and m.shape == (4, 3)
    np.testing.assert_array_equal(m.argmax(axis=1), [0, 1, 2, 0])
    np.testing.assert_array_equal(m.sum(axis=1), 1.0)


def test_assign_uses_unequal_norms_correctly():
    # A long centre must not win just for its dot product: x=(1,0) is nearer (1,0) than (3,0).
    c = Centroids(centers=np.array([[3, 0], [1, 0]], dtype=np.float32))
    assert c.assign(np.array([[1.0, 0.0], [2.5, 0.0]])).tolist() == [1, 0]


def test_assign_in_blocks_matches_brute_force(monkeypatch):
    rng = np.random.default_rng(1)
    centers = rng.normal(size=(7, 5)).astype(np.float32)
    X = rng.normal(size=(50, 5)).astype(np.float32)
    monkeypatch.setattr(cluster, "ASSIGN_BLOCK", 8)  # 50 rows -> 7 blocks, the last one partial
    brute = ((X[:, None, :] - centers[None]) ** 2).sum(-1).argmin(axis=1)
    np.testing.assert_array_equal(Centroids(centers).assign(X), brute)


def test_assign_refuses_wrong_dimension():
    c = Centroids(centers=np.zeros((2, 3), dtype=np.float32))
    with pytest.raises(ValueError, match="dimension 4, expected 3"):
        c.assign(np.zeros((1, 4), dtype=np.float32))


def test_centroids_copy_their_input():
    centers = np.array([[1.0, 0.0]], dtype=np.float32)
    c = Centroids(centers)
    centers[0, 0] = 9.0
    assert c.centers[0, 0] == 1.0
    assert not c.centers.flags.writeable


def test_fit_centroids_recovers_blobs_and_is_seeded():
    X, labels = _blobs()
    a = fit_centroids(X, 3, seed=7)
    b = fit_centroids(X, 3, seed=7)
    np.testing.assert_array_equal(a.centers, b.centers)
    assert a.centers.dtype == np.float32 and a.centers.shape == (3, 4)
    assigned = a.assign(X)
    # Each true blob maps to exactly one cluster, and different blobs to different clusters.
    mapping = {int(t): set(assigned[labels == t].tolist()) for t in range(3)}
    assert all(len(v) == 1 for v in mapping.values())
    assert len({next(iter(v)) for v in mapping.values()}) == 3


def test_fit_centroids_refuses_more_clusters_than_prompts():
    with pytest.raises(ValueError, match="k=5 clusters on 3 prompts"):
        fit_centroids(np.zeros((3, 2), dtype=np.float32), 5, seed=0)


def test_fit_centroids_dask_recovers_blobs():
    X, labels = _blobs(per=300)
    order = np.random.default_rng(3).permutation(len(X))
    X, labels = X[order], labels[order]
    c = fit_centroids_dask(da.from_array(X, chunks=(100, 2)), 3, seed=0)
    assigned = c.assign(X)
    for t in range(3):
        assert len(set(assigned[labels == t].tolist())) == 1
    assert len(set(assigned.tolist())) == 3
    # Centres sit at the true blob centres (radius 0.1 noise).
    assert np.abs(np.sort(c.centers.max(axis=1)) - 5).max() < 0.1
