"""The default setting remembered per router version and pool (pipeline/serving/default_memo.py): the same numbers
routers.tables.default_budget gives, bit for bit, and never another router's or pool's or prices'."""

from __future__ import annotations

import numpy as np

from uniroute.pipeline.serving.default_memo import FOLDER, remembered_default
from uniroute.routers.cluster.kmeans import Centroids
from uniroute.routers.router import Router
from uniroute.routers.tables import default_budget

PSI = np.array([[0.1, 0.9], [0.5, 0.5], [0.05, 0.1]])  # (M, K) losses
MODELS = ("cheap", "mid", "big")


def _router(costs=(1.0, 2.0, 4.0)) -> Router:
    return Router("emb", MODELS, np.asarray(costs, float), PSI, Centroids(np.eye(2, 3, dtype=np.float32)),
                  np.array([[30, 10], [30, 10], [30, 10]]))


def _exact(router: Router, pool: tuple[str, ...]) -> tuple[float, float]:
    budget, lam, _, _ = default_budget(router, pool)
    return float(budget), float(lam)


def test_the_remembered_default_is_the_computed_one_and_keyed_by_router_pool_and_costs(tmp_path):
    router = _router()
    first = remembered_default(tmp_path, "r1", router, MODELS)
    assert first == _exact(router, MODELS) and len(list((tmp_path / FOLDER).iterdir())) == 1
    assert remembered_default(tmp_path, "r1", router, MODELS) == first  # read back: the same floats
    pool = ("cheap", "big")
    assert remembered_default(tmp_path, "r1", router, pool) == _exact(router, pool)  # another pool, its own
    priced = _router(costs=(1.0, 3.9, 4.0))
    assert remembered_default(tmp_path, "r1", priced, MODELS) == _exact(priced, MODELS)  # costs moved: recomputed
    assert len(list((tmp_path / FOLDER).iterdir())) == 3


def test_a_damaged_memo_is_computed_again(tmp_path):
    router = _router()
    remembered_default(tmp_path, "r1", router, MODELS)
    (memo,) = (tmp_path / FOLDER).iterdir()
    memo.write_text("{not json")
    assert remembered_default(tmp_path, "r1", router, MODELS) == _exact(router, MODELS)
