"""The quality-only rule as a router kind: its served router routes like the rule, is stored as its kind, and
`auto` considers it only where every model costs the same."""

from __future__ import annotations

import numpy as np

from tests.routers.quality_rule.test_quality_eb import eb_pool
from tests.synthetic_logs import synthetic_embeddings, synthetic_long
from uniroute.experiments.logs import eval_data_from_frame
from uniroute.experiments.protocol import EvalConfig, trial_split
from uniroute.experiments.quality import unit_cost_data
from uniroute.routers.cluster.kmeans import Centroids
from uniroute.routers.cluster.psi import psi_from_losses
from uniroute.routers.quality_rule.kind import QUALITY_RULE, RuleRouter, equal_costs, rule_router
from uniroute.routers.router import Router
from uniroute.routers.serialize import router_from_bytes, router_to_bytes
from uniroute.selection.state import TrialState

MODELS = ("m0", "m1", "m2")
CENTERS = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0], [10.0, 10.0]], dtype=np.float32)


def _pool() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(X, clusters, losses): tests.routers.quality_rule.test_quality_eb's pool, four clusters of 40 validation prompts.

    m0 is best overall. Cluster 0: m1 is one prompt ahead of m0, noise, so the rule keeps m0 where the plain argmin
    takes m1. Cluster 3: m2 never errs (m0: 0.3), so the rule moves it to m2."""
    clusters, losses = eb_pool()
    X = CENTERS[clusters] + np.random.default_rng(0).normal(0, 0.1, (clusters.size, 2)).astype(np.float32)
    return X, clusters, losses


def _routers() -> tuple[Router, RuleRouter, np.ndarray]:
    X, clusters, losses = _pool()
    psi = psi_from_losses(clusters, losses, 4, MODELS)
    plain = Router("emb", MODELS, np.ones(3), psi.values, Centroids(CENTERS), psi.counts)
    return plain, rule_router(plain, clusters, losses), X


def test_the_served_router_routes_like_the_rule_at_every_lambda() -> None:
    plain, rule, X = _routers()
    expected = np.repeat([0, 0, 0, 2], 40)
    assert plain.route(X, 0.0).tolist() == np.repeat([1, 0, 0, 2], 40).tolist()  # the per-cluster argmin: noise
    for lam in (0.0, 5.0):
        assert rule.route(X, lam).tolist() == expected.tolist()
    assert rule.kind == QUALITY_RULE.name
    np.testing.assert_array_equal(rule.psi, plain.psi)  # what validation measured is kept as it was
    # A request's pool without the rule's model: the next one by its routing cell (m1 here, as its cell is lower).
    assert set(rule.route_names(X[:40], 0.0, ["m1", "m2"]).tolist()) == {"m1"}


def test_the_rule_router_is_stored_and_onboarded_as_its_kind() -> None:
    _, rule, X = _routers()
    back = router_from_bytes(router_to_bytes(rule))
    assert isinstance(back, RuleRouter) and back.kind == QUALITY_RULE.name
    assert back.route(X, 0.0).tolist() == rule.route(X, 0.0).tolist()
    joined = rule.with_model("m3", np.full(4, 0.9), 1.0, np.full(4, 40))
    assert joined.kind == QUALITY_RULE.name and joined.route(X, 0.0).tolist() == rule.route(X, 0.0).tolist()


def test_equal_costs_means_every_model_at_one_mean_cost() -> None:
    assert equal_costs(np.ones((4, 3)), np.full((2, 3), np.nan))
    assert equal_costs(np.array([[1.0, np.nan], [1.0, 1.0]]))
    assert not equal_costs(np.array([[1.0, 2.0], [1.0, 2.0]]))


def test_auto_considers_the_rule_only_where_every_model_costs_the_same() -> None:
    frame = synthetic_long(n_prompts=240)
    config = EvalConfig(seed=0)
    for data, candidate in ((unit_cost_data(frame), True), (eval_data_from_frame(frame), False)):
        X = synthetic_embeddings(data)
        split = trial_split(data.routing, config.seed, 0, config.train_frac, config.val_frac)
        state = TrialState(X, data.routing, split, config)
        kinds = [t.kind for t in state.selection(len(split.val)).candidates]
        assert (QUALITY_RULE.name in kinds) == candidate, kinds
