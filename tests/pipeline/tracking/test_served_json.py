"""MLflow's scoring server, given the C JSON encoder in a serving process (tracking/served_json.py), writes the very
text its own pure-Python path writes: compared on MLflow's own writers, before and after, on what an answer may
hold (NaN, infinities, None, numpy scalars and arrays, nesting, unicode, a frame) and on the router's served rows."""

from __future__ import annotations

import io
import json
import math

import numpy as np
import pandas as pd
import pytest
from mlflow.exceptions import MlflowException
from mlflow.pyfunc import scoring_server

from uniroute.pipeline.tracking.served_json import OneShotJson, restore_stream_json, use_one_shot_json

from .test_pyfunc_output import PROMPTS, REQUESTS, served  # noqa: F401  # the served model fixture

ROW = {"prompt_index": 0, "model": "gpt-4o", "decision_id": "ab" * 16, "cluster": None, "lam": 0.05,
       "budget": math.nan, "setting": "default budget", "max_cost": None, "max_latency": None, "router_id": "r-1",
       "fallbacks": ["mid", "cheap"], "expected_score": 0.8123456789012345, "expected_cost": 1e-7,
       "price_snapshot": None}
ANSWERS = {
    "rows": [ROW, ROW | {"cluster": 3, "budget": 0.5, "fallbacks": []}],
    "non-finite": [{"a": math.nan, "b": math.inf, "c": -math.inf, "d": -0.0, "e": 1e300, "f": 2**70, "g": True}],
    "numpy": [{"i": np.int64(7), "f": np.float64(0.1), "g": np.float32(0.1), "b": np.bool_(True),
               "n": np.float64("nan"), "arr": np.arange(3), "obj": np.array([1, None, "x"], dtype=object),
               "nested": {"k": [np.int32(1), {"z": np.float16(0.5)}]}}],
    "unicode": [{"text": "naïve café 数学 🙂 \x00\x1f \"quoted\" back\\slash \u2028", "ключ": "значение"}],
    "odd keys": [{3: "int key", 2.5: "float key", None: "none key", True: "bool key"}],
    "frame": pd.DataFrame({"x": [1.0, np.nan, 3.5], "y": ["a", None, "c"], "z": [1, 2, 3]}),
    "scalar and string": "just a string",
    "empty": [],
}


@pytest.fixture
def stream_json():
    """MLflow's writers as they ship for the test, and after it, whatever the test installed."""
    restore_stream_json()
    yield
    restore_stream_json()


def _written(writer, answer, **kwargs) -> str:
    out = io.StringIO()
    writer(answer, out, **kwargs)
    return out.getvalue()


def _both(writer, answer, **kwargs) -> tuple[str, str]:
    """(MLflow's text, the text with the C encoder) of one answer."""
    restore_stream_json()
    shipped = _written(writer, answer, **kwargs)
    use_one_shot_json()
    return shipped, _written(writer, answer, **kwargs)


@pytest.mark.parametrize("name", list(ANSWERS))
def test_the_same_text_as_mlflows_stream_encoder(stream_json, name):
    for writer, kwargs in ((scoring_server.predictions_to_json, {}),
                           (scoring_server.predictions_to_json, {"metadata": {"served_by": "uniroute"}}),
                           (scoring_server.unwrapped_predictions_to_json, {})):
        shipped, one_shot = _both(writer, ANSWERS[name], **kwargs)
        assert one_shot == shipped


def test_what_mlflow_refuses_it_refuses_alike(stream_json):
    for answer in ([{"x": object()}], [{(1, 2): "tuple key"}]):
        messages = []
        for install in (restore_stream_json, use_one_shot_json):
            install()
            with pytest.raises(TypeError) as raised:
                _written(scoring_server.predictions_to_json, answer)
            messages.append(str(raised.value))
        assert messages[0] == messages[1]
    with pytest.raises(MlflowException, match="metadata cannot contain 'predictions'"):
        _written(scoring_server.predictions_to_json, [], metadata={"predictions": 1})


@pytest.mark.parametrize("request_name", [*REQUESTS, "explain"])
def test_the_served_rows_go_out_as_mlflow_writes_them(stream_json, served, monkeypatch,  # noqa: F811
                                                      request_name):
    params = {"explain": True} if request_name == "explain" else REQUESTS[request_name]
    assert not isinstance(scoring_server.json, OneShotJson)
    monkeypatch.setenv("_MLFLOW_IS_IN_SERVING_ENVIRONMENT", "true")  # what MLflow's scoring app sets
    rows = served.predict(None, {"prompt": PROMPTS}, params=params)
    assert isinstance(scoring_server.json, OneShotJson)  # a served request installs it
    shipped, one_shot = _both(scoring_server.predictions_to_json, rows)
    assert one_shot == shipped and json.loads(one_shot)["predictions"][0]["model"]


def test_outside_a_serving_process_nothing_changes(stream_json, served):  # noqa: F811
    served.predict(None, {"prompt": PROMPTS}, params={})
    assert scoring_server.json is json
