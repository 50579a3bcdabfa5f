"""Decision ids: what uuid.uuid4().hex gives, drawn for a batch at once."""

from __future__ import annotations

import uuid

from uniroute.pipeline.serving.records import new_decision_ids


def test_decision_ids_are_random_uuid4_hex():
    ids = new_decision_ids(2000)
    assert len(set(ids)) == len(ids) == 2000
    for text in ids:
        parsed = uuid.UUID(hex=text)
        assert parsed.hex == text and parsed.version == 4 and parsed.variant == uuid.RFC_4122
    # every other bit is drawn: each hex digit outside the version's takes many values across the batch
    assert all(len({text[i] for text in ids}) >= 4 for i in range(32) if i != 12)
    assert new_decision_ids(0) == [] and len(new_decision_ids(1)[0]) == 32


def test_records_of_routed_columns_are_those_of_their_frame():
    """The routed columns (arrays, shared fall-back lists) give the records their frame gives row by row: NaN and
    NA as None, each row its own list of names, every value a Python float, int or str."""
    import numpy as np
    import orjson
    import pandas as pd

    from uniroute.pipeline.serving.records import Served, decision_records
    from uniroute.routers.cluster.kmeans import Centroids
    from uniroute.routers.router import Router

    router = Router("e1", ("a", "b", "c"), np.array([1.0, 2.0, 3.0]),
                    np.array([[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]]), Centroids(np.eye(2, 3, dtype=np.float32)), None)
    shared = ["b", "c"]
    n = 5
    columns = {
        "decision_id": new_decision_ids(n), "text_hash": [f"h{i}" for i in range(n)],
        "cluster": [0, 1, None, 1, 0], "model": np.array(["a", "b", "c", "a", "a"], dtype=object),
        "fallbacks": [shared, ["a", "c"], shared, None, shared],
        "expected_score": np.array([0.9, np.nan, 0.5, 1 / 3, 0.25], dtype=np.float32),
        "expected_cost": np.array([1.0, 2.0, np.nan, 1.0, 1e-20]),
        "lam": [0.5] * n, "budget": [None] * n, "setting": ["lambda"] * n,
    }
    frame = pd.DataFrame({**columns, "cluster": pd.array(columns["cluster"], dtype="Int32"),
                          "expected_score": pd.array(columns["expected_score"].astype(object), dtype="Float64")})
    frame.loc[1, "expected_score"] = pd.NA
    X = np.random.default_rng(0).normal(size=(n, 3)).astype(np.float32)
    served = Served("pyfunc", "r1", "e1")
    got = decision_records(columns, X, router, served)
    expected = decision_records(frame, X, router, served)
    got_decided, expected_decided = {r.pop("decided_at") for r in got}, {r.pop("decided_at") for r in expected}
    assert len(got_decided) == len(expected_decided) == 1
    assert got == expected and orjson.dumps(got) == orjson.dumps(expected)
    assert [r["expected_score"] for r in got] == [float(np.float32(0.9)), None, 0.5, float(np.float32(1 / 3)), 0.25]
    assert [r["expected_cost"] for r in got] == [1.0, 2.0, None, 1.0, 1e-20]
    assert [r["fallbacks"] for r in got] == [["b", "c"], ["a", "c"], ["b", "c"], None, ["b", "c"]]
    assert len({id(r["fallbacks"]) for r in got}) == n  # no row's list is another's
    assert all(type(v) is float for r in got for v in (r["expected_cost"], r["lam"]) if v is not None)
