import numpy as np
import pandas as pd
import pytest

from uniroute.routers.cluster.psi import Psi, psi_from_frame, psi_from_losses

NAN = np.nan

# Six validation prompts in K = 4 clusters; cluster 3 holds no prompt at all (an empty cluster).
CLUSTER_OF = np.array([0, 0, 1, 1, 1, 2])
# Losses (1 - score) of models a, b, c. b has no result on prompts 2, 3, 4 (all of cluster 1);
# c has a fractional score and misses prompt 0.
LOSSES = np.array(
    [
        [0.0, 1.0, NAN],
        [1.0, 1.0, 0.5],
        [1.0, NAN, 0.0],
        [0.0, NAN, 0.0],
        [1.0, NAN, 1.0],
        [0.0, 0.0, 0.25],
    ]
)
MODELS = ("a", "b", "c")


def test_psi_by_hand_with_fallbacks():
    psi = psi_from_losses(CLUSTER_OF, LOSSES, 4, MODELS)
    # Empty cells take the pool prior pool_k + N / (N + 20) * (overall - seen) (routers/psi.pool_prior). The pool's
    # loss per cluster: 0 -> 3.5 / 5 = 0.7, 1 -> 3 / 6 = 0.5, 2 -> 0.25 / 3, 3 (nobody) -> overall 6.75 / 14.
    pool = [0.7, 0.5, 0.25 / 3, 6.75 / 14]
    # seen = the pool's loss on the clusters the model answered, weighted by its answers there.
    lead_a = 6 / 26 * (3 / 6 - (2 * pool[0] + 3 * pool[1] + pool[2]) / 6)
    lead_b = 3 / 23 * (2 / 3 - (2 * pool[0] + pool[2]) / 3)
    lead_c = 5 / 25 * (1.75 / 5 - (pool[0] + 3 * pool[1] + pool[2]) / 5)
    # a: clusters 0,1,2 -> 1/2, 2/3, 0; empty cluster 3 -> pool + lead.
    # b: cluster 0 -> 1, cluster 1 unanswered -> 0.5 + lead_b = 0.5225, cluster 2 -> 0, cluster 3 -> pool + lead.
    # c: cluster 0 -> 0.5 (one answer), cluster 1 -> 1/3, cluster 2 -> 0.25, cluster 3 -> pool + lead (below pool).
    expected = [
        [0.5, 2 / 3, 0.0, pool[3] + lead_a],
        [1.0, pool[1] + lead_b, 0.0, pool[3] + lead_b],
        [0.5, 1 / 3, 0.25, pool[3] + lead_c],
    ]
    assert expected[1][1] == pytest.approx(0.522464, abs=1e-6) and lead_c < 0 < lead_a < lead_b
    np.testing.assert_allclose(psi.values, expected)
    np.testing.assert_array_equal(psi.counts, [[2, 3, 1, 0], [2, 0, 1, 0], [1, 3, 1, 0]])
    assert psi.models == MODELS and psi.k == 4
    np.testing.assert_allclose(psi.row("b"), expected[1])


def test_psi_model_without_any_label_is_named():
    losses = LOSSES.copy()
    losses[:, 1] = NAN
    with pytest.raises(ValueError, match=r"\['b'\]"):
        psi_from_losses(CLUSTER_OF, losses, 4, MODELS)


def test_psi_rejects_bad_inputs():
    with pytest.raises(ValueError, match="cluster ids must lie in"):
        psi_from_losses(CLUSTER_OF, LOSSES, 2, MODELS)
    with pytest.raises(ValueError, match="3 columns but 2 model names"):
        psi_from_losses(CLUSTER_OF, LOSSES, 4, ("a", "b"))


def test_psi_is_frozen():
    psi = psi_from_losses(CLUSTER_OF, LOSSES, 4, MODELS)
    assert not psi.values.flags.writeable
    with pytest.raises(AttributeError):
        psi.models = ("x",)
    with pytest.raises(KeyError, match="'z'"):
        psi.row("z")
    with pytest.raises(ValueError, match="non-finite"):
        Psi(models=("a",), values=np.array([[NAN]]), counts=np.array([[0]]))


def _frame_from_arrays(cluster_of: np.ndarray, losses: np.ndarray, models: tuple[str, ...]) -> pd.DataFrame:
    rows = []
    for j, m in enumerate(models):
        for k in np.unique(cluster_of):
            col = losses[cluster_of == k, j]
            col = col[~np.isnan(col)]
            if col.size:
                rows.append({"model": m, "cluster": int(k), "loss_sum": col.sum(), "n": col.size})
    return pd.DataFrame(rows)


def test_psi_from_frame_matches_psi_from_losses():
    frame = _frame_from_arrays(CLUSTER_OF, LOSSES, MODELS)
    a = psi_from_frame(frame, 4)
    b = psi_from_losses(CLUSTER_OF, LOSSES, 4, MODELS)
    assert a.models == b.models
    np.testing.assert_allclose(a.values, b.values)
    np.testing.assert_array_equal(a.counts, b.counts)


def test_psi_from_frame_rejects_bad_frames():
    with pytest.raises(ValueError, match="lacks columns"):
        psi_from_frame(pd.DataFrame({"model": ["a"], "cluster": [0]}), 2)
    with pytest.raises(ValueError, match="cluster ids must lie in"):
        psi_from_frame(pd.DataFrame({"model": ["a"], "cluster": [3], "loss_sum": [1.0], "n": [1]}), 2)
    dup = pd.DataFrame({"model": ["a", "a"], "cluster": [0, 0], "loss_sum": [1.0, 1.0], "n": [1, 2]})
    with pytest.raises(ValueError, match="more than one row"):
        psi_from_frame(dup, 2)


def test_shrunk_values_move_sparse_cells_toward_the_pool_prior():
    from uniroute.routers.cluster.psi import shrunk_values

    psi = psi_from_losses(CLUSTER_OF, LOSSES, 4, MODELS)
    np.testing.assert_array_equal(shrunk_values(psi.values, psi.counts, 0.0), psi.values)
    got = shrunk_values(psi.values, psi.counts, 2.0)
    # a (6 answers, overall 1/2, the pool 0.497222 where it answered): its prior is each cluster's pool loss
    # + 6/26 * (0.5 - 0.497222). Cluster 2 (pool 0.25 / 3): its one answer (loss 0) keeps weight 1 / (1 + 2).
    lead_a = 6 / 26 * (0.5 - (2 * 0.7 + 3 * 0.5 + 0.25 / 3) / 6)
    assert got[0, 2] == pytest.approx(2 * (0.25 / 3 + lead_a) / 3)
    # Cluster 0 (pool 3.5 / 5 = 0.7): a's 2 answers at 1/2 weigh 2 / (2 + 2).
    assert got[0, 0] == pytest.approx((2 * 0.5 + 2 * (0.7 + lead_a)) / 4)
    # an empty cell is the prior whatever the strength
    assert got[0, 3] == pytest.approx(psi.values[0, 3])
    with pytest.raises(ValueError, match="finite and >= 0"):
        shrunk_values(psi.values, psi.counts, -1.0)


def test_cell_frame_carries_counts_intervals_and_sparse_flags():
    from uniroute.routers.cluster.psi import cell_frame

    psi = psi_from_losses(CLUSTER_OF, LOSSES, 4, MODELS)
    frame = cell_frame(psi.models, psi.values, psi.counts, strength=2.0).set_index(["model", "cluster"])
    assert len(frame) == 12 and frame.loc[("a", 1), "n"] == 3
    # Wilson interval of 2 losses in 3 prompts: it contains the mean and stays inside [0, 1]
    lo, hi = frame.loc[("a", 1), ["error_lo", "error_hi"]]
    assert 0 < lo < 2 / 3 < hi < 1
    assert frame.loc[("a", 3), ["error_lo", "error_hi"]].tolist() == [0.0, 1.0]  # an empty cell says nothing
    assert frame["sparse"].all()  # every cell here has fewer than 10 prompts
    lead_a = 6 / 26 * (0.5 - (2 * 0.7 + 3 * 0.5 + 0.25 / 3) / 6)  # as in the test above
    assert frame.loc[("a", 2), "shrunk_error"] == pytest.approx(2 * (0.25 / 3 + lead_a) / 3)


def test_psi_from_the_frame_of_some_models_is_psi_from_their_losses() -> None:
    """The build's Psi over every validation prompt (psi_data.val_psi) reads the group-by of every active model
    and keeps the router's models in the router's order: the pool prior is theirs, as psi_from_losses has it."""
    rng = np.random.default_rng(0)
    clusters = rng.integers(0, 3, size=40)
    losses = np.where(rng.random((40, 3)) < 0.3, np.nan, rng.random((40, 3)))
    losses[clusters == 2, 1] = np.nan  # a cell without an answer: the pool prior fills it
    names = ["m0", "m1", "m2"]
    frame = pd.DataFrame([{"model": names[m], "cluster": c, "loss_sum": np.nansum(losses[clusters == c, m]),
                           "n": int((~np.isnan(losses[clusters == c, m])).sum())}
                          for m in range(3) for c in range(3) if (~np.isnan(losses[clusters == c, m])).any()])
    got = psi_from_frame(frame, 3, ["m1", "m0"])
    expected = psi_from_losses(clusters, losses[:, [1, 0]], 3, ["m1", "m0"])
    assert got.models == expected.models
    np.testing.assert_allclose(got.values, expected.values, atol=1e-12)
    np.testing.assert_array_equal(got.counts, expected.counts)
