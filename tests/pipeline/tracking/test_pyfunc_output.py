"""The served model answers with the fields, types and records it always had, whatever it works out once per
router rather than per request: the frame `uniroute route` gives (route_texts) on the same router and prompts,
request after request, and one decision record per row that says what the row says.

The router keeps counts (so its decisions carry the cells' intervals) and its pool has a cheaper model within
reach (so the default setting is not lambda 0); records go to a real spool in a temporary home.
"""

from __future__ import annotations

import io
import json
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from uniroute.pipeline.serving.route import RoutingSource, route_texts
from uniroute.pipeline.tracking.pyfunc import router_model_class, served_spool
from uniroute.routers.cluster.kmeans import Centroids
from uniroute.routers.router import Router
from uniroute.routers.tables import default_budget, routing_tables
from uniroute.settings import Settings

PROMPTS = ["a question", "b question", "c question"]
# What a client of the served model reads, in this order, with these types (a request naming no setting).
COLUMNS = {"prompt_index": "int64", "model": "str", "decision_id": "str", "cluster": "object", "lam": "float64",
           "budget": "float64", "setting": "str", "max_cost": "object", "max_latency": "object", "router_id": "str",
           "fallbacks": "object", "expected_score": "float64", "expected_cost": "float64", "price_snapshot": "str"}
SAME_AS_ROUTE = ("model", "fallbacks", "expected_score", "expected_cost", "lam", "budget", "setting")
REQUESTS: dict[str, dict[str, Any]] = {"no setting": {}, "lambda": {"lambda": 0.05}, "budget": {"budget": 0.5},
                                        "max cost": {"max_cost": 6.0}, "pool": {"pool": "cheap,mid"}}


class _LineEmbedder:
    """Prompts on a line: the first character's parity picks the side (what the two-cluster router needs)."""

    embedder_id = "toy-embedder"

    def encode(self, texts: list[str]) -> np.ndarray:
        return np.array([[-1.0 if ord(t[0]) % 2 else 1.0, 0.0] for t in texts], dtype=np.float32)


def _router() -> Router:
    centroids = Centroids(np.array([[-1.0, 0.0], [1.0, 0.0]], dtype=np.float32))
    psi = np.array([[0.1, 0.45], [0.5, 0.1], [0.6, 0.3]])
    counts = np.array([[40, 30], [40, 30], [12, 9]])
    return Router("toy-embedder", ("cheap", "big", "mid"), np.array([1.0, 10.0, 5.0]), psi, centroids, counts)


@pytest.fixture
def served(tmp_path):
    """The pyfunc class MLflow serves over the router, recording to a spool in tmp_path's home."""
    model = router_model_class()()
    model.router, model.embedder, model.router_id, model.X_val = _router(), _LineEmbedder(), "r-toy", None
    model.price_snapshot = "2026-11-28/prices"
    model.spool, model.recording = served_spool(Settings(home=tmp_path / "home"))
    yield model
    if model.spool is not None:
        model.spool.close()


def _spooled(home) -> list[dict]:
    return [json.loads(line) for path in sorted((home / "spool" / "decisions").glob("*.jsonl"))
            for line in path.read_text().splitlines()]


def test_the_served_frame_keeps_its_fields_and_types_request_after_request(served):
    first, second = (served.predict(None, {"prompt": PROMPTS}, params={}) for _ in range(2))
    for frame in (first, second):
        assert {c: str(frame[c].dtype) for c in frame.columns} == COLUMNS
        # JSON carries a cluster as a plain int (pandas' NA or a numpy int would not serialise alike)
        assert [type(c) for c in frame["cluster"]] == [int] * len(PROMPTS)
        assert frame["max_cost"].tolist() == [None] * len(PROMPTS)
    assert first.drop(columns="decision_id").equals(second.drop(columns="decision_id"))
    assert not set(first["decision_id"]) & set(second["decision_id"])


@pytest.mark.parametrize("request_name", list(REQUESTS))
def test_the_served_model_answers_what_route_answers(served, request_name):
    params = REQUESTS[request_name]
    source = RoutingSource(served.router, "r-toy", served.router.models, frozenset(), None, "test")
    pool = params["pool"].split(",") if "pool" in params else None
    expected = route_texts(source, PROMPTS, params.get("lambda"), params.get("budget"), pool,
                           embedder=_LineEmbedder(), max_cost=params.get("max_cost"))
    for _ in range(2):  # the second request is answered from what the first worked out
        frame = served.predict(None, {"prompt": PROMPTS}, params=params)
        assert list(frame.columns) == list(COLUMNS)
        for column in SAME_AS_ROUTE:
            assert frame[column].tolist() == expected[column].tolist(), column
        assert frame["cluster"].tolist() == expected["cluster"].astype(int).tolist()
        assert frame["prompt_index"].tolist() == list(range(len(PROMPTS)))


def test_each_served_row_is_recorded_as_it_was_answered(served, tmp_path):
    frames = [served.predict(None, {"prompt": PROMPTS}, params=params) for params in REQUESTS.values()]
    served.spool.close()
    records = {r["decision_id"]: r for r in _spooled(tmp_path / "home")}
    rows = [row for frame in frames for row in frame.to_dict("records")]
    assert len(records) == len(rows)
    for row in rows:
        record = records[row["decision_id"]]
        assert record["source"] == "pyfunc" and record["router_id"] == "r-toy"
        assert record["embedder_id"] == "toy-embedder" and record["embedding_dim"] == 2
        for field in ("model", "fallbacks", "cluster", "lam", "setting", "expected_score", "expected_cost"):
            assert record[field] == row[field], field
        assert record["budget"] == (None if row["budget"] is None or np.isnan(row["budget"]) else row["budget"])


def test_a_changed_router_gets_its_own_default_and_intervals():
    router = _router()
    assert default_budget(router, router.models)  # worked out, and kept for this router
    router.candidate_errors(np.zeros((1, 2), dtype=np.float32), np.arange(3))
    # Same models, other evidence: a router derived from it must not answer from what the first worked out.
    changed = router.with_model("mid", np.array([0.05, 0.05]), 5.0, np.array([400, 300]))
    fresh = replace(changed)  # the same router as a new object: nothing worked out yet
    assert default_budget(changed, changed.models) != default_budget(router, router.models)
    assert default_budget(changed, changed.models) == default_budget(fresh, fresh.models)
    X = np.array([[-1.0, 0.0], [1.0, 0.0]], dtype=np.float32)
    for got, want in zip(changed.candidate_errors(X, np.arange(3)), fresh.candidate_errors(X, np.arange(3)),
                         strict=True):
        np.testing.assert_array_equal(got, want)
    # the default is the routing tables' own row
    rows = routing_tables(changed, changed.models).budgets
    budget, lam, score, _ = default_budget(changed, changed.models)
    assert ((rows["lam"] == lam) & np.isclose(rows["expected_score"], score)).any()


@pytest.mark.parametrize("request_name", [*REQUESTS, "explain"])
def test_mlflows_server_sends_the_frames_json(served, monkeypatch, request_name):
    # In the process MLflow's server marks (its scoring app sets this variable), the answer goes out as the rows
    # MLflow would make of the frame: the JSON a client reads must not change with that shortcut.
    from mlflow.pyfunc.scoring_server import predictions_to_json

    params = {"explain": True} if request_name == "explain" else REQUESTS[request_name]
    frame = served.predict(None, {"prompt": PROMPTS}, params=params)
    monkeypatch.setenv("_MLFLOW_IS_IN_SERVING_ENVIRONMENT", "true")
    rows = served.predict(None, {"prompt": PROMPTS}, params=params)
    assert isinstance(rows, list)
    sent = []
    for answer in (frame, rows):
        out = io.StringIO()
        predictions_to_json(answer, out)
        sent.append(json.loads(out.getvalue())["predictions"])
    for row in (*sent[0], *sent[1]):
        row.pop("decision_id")
    assert json.dumps(sent[1]) == json.dumps(sent[0])  # the same fields, order and types (1 is not 1.0)
