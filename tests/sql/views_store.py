"""A small store for the user views, every answer worked out by hand (tests/sql/test_user_views.py says them).

A nightly build R1 (clusters 0 and 1, models a and b) and an onboarding child R2 that adds c on the same
clusters; publication V1 of R1, then V2 of R2. Psi counts give cluster 0 three validation prompts and
cluster 1 one, so cluster 0 carries 3/4 of the traffic. Costs: a 1, b 4, c 2 (the most expensive is 4).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pandas as pd

from uniroute import store

T0 = datetime(2026, 11, 1, 2, 0)
T1 = datetime(2026, 11, 1, 9, 0)


def routers_frame() -> pd.DataFrame:
    """The two router versions: the build R1 and its onboarding child R2."""
    common = {"clustering_id": "C1", "kind": "kmeans", "embedder_id": "e", "k": 2, "val_area": 0.5,
              "promoted": True, "reason": "test", "data_fingerprint": "f", "router": b"", "candidate_of": None}
    return pd.DataFrame([
        {**common, "router_id": "R1", "parent_id": None, "origin": "build", "models": ["a", "b"], "created_at": T0},
        {**common, "router_id": "R2", "parent_id": "R1", "origin": "onboard", "models": ["a", "b", "c"],
         "created_at": T1},
    ])


def _psi() -> pd.DataFrame:
    # (model, cluster): (loss, n). Cluster 0 has 3 validation prompts, cluster 1 has 1; c has no answer in 1.
    cells = {("a", 0): (0.2, 3), ("a", 1): (0.6, 1), ("b", 0): (0.4, 3), ("b", 1): (0.1, 1)}
    rows = [{"router_id": "R1", "model": m, "cluster": c, "loss": loss, "n": n} for (m, c), (loss, n) in cells.items()]
    cells |= {("c", 0): (0.1, 3), ("c", 1): (0.5, 0)}
    rows += [{"router_id": "R2", "model": m, "cluster": c, "loss": loss, "n": n} for (m, c), (loss, n) in cells.items()]
    return pd.DataFrame(rows)


def _routes(version: str, cluster0: str) -> list[dict]:
    """Budget 0.5 and normalised lambda 0 (lam = 0 / 4); cluster 0 goes to `cluster0`, cluster 1 to b."""
    return [{"version": version, "cluster": c, "grid": grid, "budget": budget, "lam": 0.0, "model": m}
            for grid, budget in (("budget", 0.5), ("lambda", None))
            for c, m in ((0, cluster0), (1, "b"))]


def write_views_store(db_path: Path) -> Path:
    """Write the hand-checked store into db_path; returns db_path."""
    pubs = pd.DataFrame([
        {"version": "V1", "router_id": "R1", "embedder_id": "e", "pool": ["a", "b"],
         "fingerprint": "f1", "checksum": "x", "path": "/p/V1", "created_at": datetime(2026, 11, 1, 3, 0)},
        {"version": "V2", "router_id": "R2", "embedder_id": "e", "pool": ["a", "b", "c"],
         "fingerprint": "f2", "checksum": "y", "path": "/p/V2", "created_at": datetime(2026, 11, 1, 10, 0)},
    ])
    costs = pd.DataFrame({"router_id": ["R1", "R1", "R2", "R2", "R2"], "model": ["a", "b", "a", "b", "c"],
                          "cost": [1.0, 4.0, 1.0, 4.0, 2.0]})
    budgets = pd.DataFrame([
        # V1 at budget 0.5: a on cluster 0, b on cluster 1: score .75*.8 + .25*.9, cost (.75*1 + .25*4) / 4.
        {"version": "V1", "grid": "budget", "budget": 0.5, "lam": 0.0, "expected_score": 0.825,
         "expected_cost": 0.4375},
        # V2 at budget 0.5: c on cluster 0, b on cluster 1: score .75*.9 + .25*.9, cost (.75*2 + .25*4) / 4.
        {"version": "V2", "grid": "budget", "budget": 0.5, "lam": 0.0, "expected_score": 0.9, "expected_cost": 0.625},
    ])
    log = pd.DataFrame({
        "batch_id": ["b1", "b1", "b1", "b2", "b3"], "router_id": "R2", "prompt_index": [0, 1, 2, 0, 0],
        "text_hash": "h", "cluster": [0, 0, 1, 1, 0], "model": ["c", "c", "b", "b", "c"], "lam": 0.0,
        "budget": None,
        "routed_at": [datetime(2026, 11, 2, 8), datetime(2026, 11, 2, 8), datetime(2026, 11, 2, 8),
                      datetime(2026, 11, 2, 17), datetime(2026, 11, 3, 1)],
    })
    with store.opened(db_path) as con:
        store.write_frame(con, "routers", routers_frame())
        store.write_frame(con, "psi", _psi())
        store.write_frame(con, "router_costs", costs)
        store.write_frame(con, "publications", pubs)
        store.write_frame(con, "published_routes", pd.DataFrame(_routes("V1", "a") + _routes("V2", "c")))
        store.write_frame(con, "published_budgets", budgets)
        store.write_frame(con, "routing_log", log)
    return db_path


