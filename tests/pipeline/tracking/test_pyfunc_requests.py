"""The MLflow pyfunc refuses what `uniroute route` refuses, with the CLI's words, as a request error (MLflow's
server answers it with a 400 and the message, not a stack trace)."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from mlflow.exceptions import MlflowException

from tests.robustness.test_bad_arguments import CASES
from uniroute.pipeline.tracking.pyfunc import router_model_class
from uniroute.routers.cluster.kmeans import Centroids
from uniroute.routers.router import Router


class _LineEmbedder:
    """Prompts on a line: the first character's parity picks the side (what the two-cluster router needs)."""

    embedder_id = "toy-embedder"

    def encode(self, texts: list[str]) -> np.ndarray:
        return np.array([[-1.0 if ord(t[0]) % 2 else 1.0, 0.0] for t in texts], dtype=np.float32)


@pytest.fixture
def served():
    """The pyfunc class MLflow serves, holding a two-cluster router over cheap, big and mid."""
    centroids = Centroids(np.array([[-1.0, 0.0], [1.0, 0.0]], dtype=np.float32))
    psi = np.array([[0.1, 0.9], [0.5, 0.1], [0.6, 0.6]])
    model = router_model_class()()
    model.router = Router("toy-embedder", ("cheap", "big", "mid"), np.array([1.0, 10.0, 5.0]), psi, centroids)
    model.embedder, model.router_id, model.X_val = _LineEmbedder(), "r-toy", None
    return model


# (prompts, params, the CLI case whose one line the pyfunc must say too)
REFUSED = {
    "negative budget": (["a"], {"budget": -0.5}, "negative budget"),
    "NaN budget": (["a"], {"budget": math.nan}, "NaN budget"),
    "budget above 1": (["a"], {"budget": 2.0}, "budget above 1"),
    "budget 5": (["a"], {"budget": 5.0}, "budget 0"),
    "negative lambda": (["a"], {"lambda": -1.0}, "negative lambda"),
    "infinite lambda": (["a"], {"lambda": math.inf}, "infinite lambda"),
    "lambda and budget": (["a"], {"lambda": 1.0, "budget": 0.5}, "lambda and budget"),
    "negative max cost": (["a"], {"max_cost": -2.0}, "negative max cost"),
    "max cost below the cheapest": (["a"], {"max_cost": 1e-12}, "max cost below the cheapest"),
    "max cost and lambda": (["a"], {"lambda": 1.0, "max_cost": 5.0}, "max cost and lambda"),
    "unknown pool model": (["a"], {"pool": "nobody"}, "unknown pool model"),
    "empty pool": (["a"], {"pool": " , "}, "empty pool"),
    "whitespace prompt": (["   "], {}, "empty prompt"),
    "null prompt": (["fine", None], {}, "blank second prompt"),
    "no prompt": ([], {}, "no prompt"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_the_pyfunc_refuses_what_the_cli_refuses_with_its_words(served, case):
    prompts, params, cli_case = REFUSED[case]
    with pytest.raises(MlflowException) as refused:
        served.predict(None, {"prompt": prompts}, params={"lambda": 0.0, "budget": -1.0, "pool": "", **params})
    assert re.search(CASES[cli_case][1], refused.value.message), refused.value.message
    assert "\n" not in refused.value.message


def test_the_signature_defaults_mean_not_given(served):
    routed = served.predict(None, {"prompt": ["a", "b"]}, params={"lambda": 0.0, "budget": 0.5, "pool": ""})
    assert routed["prompt_index"].tolist() == [0, 1] and set(routed["model"]) <= {"cheap", "big", "mid"}


def test_the_pyfunc_explains_when_asked_and_always_ranks_the_fallbacks(served):
    plain = served.predict(None, {"prompt": ["a", "b"]}, params={"lambda": 0.05})
    # "a" is odd: cluster 0 (cheap .1 + .05, big .5 + .5, mid .6 + .25); "b" even: cluster 1 (big .1 + .5 first).
    assert plain["model"].tolist() == ["cheap", "big"] and "explain" not in plain.columns
    assert plain["fallbacks"].tolist() == [["mid", "big"], ["mid", "cheap"]]
    assert plain["expected_score"].tolist() == pytest.approx([0.9, 0.9]) and plain["expected_cost"].tolist() == [1, 10]
    for flag in (True, "true"):
        explained = served.predict(None, {"prompt": ["a", "b"]}, params={"lambda": 0.05, "explain": flag})
        terms = explained["explain"][0]
        assert [t["model"] for t in terms] == ["cheap", "mid", "big"] and [t["rank"] for t in terms] == [1, 2, 3]
        assert terms[0]["total"] == pytest.approx(0.15) and terms[2]["lam_cost"] == pytest.approx(0.5)
        assert terms[0]["error_lo"] is None  # this router keeps no counts: no interval
