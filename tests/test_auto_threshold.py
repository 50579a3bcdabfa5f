"""The replay of `auto`'s bar on stored runs (benchmarks/quality/auto_threshold.py) never reports an Area for a
rule it cannot replay: a kind the run did not score on test, or a run whose stored choices the rule does not give."""

from __future__ import annotations

import copy
import json

import pytest

from benchmarks.quality.auto_threshold import RUNS, replay

SYNTHETIC = next(path for path in RUNS if path.stem == "hierarchy_synthetic_topics")


@pytest.fixture(scope="module")
def run() -> dict:
    return json.loads(SYNTHETIC.read_text())


def test_every_bar_replays_on_a_run_that_scored_every_kind(run) -> None:
    rows = replay(run, "synthetic")["rows"]
    assert all("area" in r for r in rows) and [r["z"] for r in rows] == sorted(r["z"] for r in rows)
    assert next(r for r in rows if r["z"] == 2.0)["vs_current"]["diff"] == 0.0


def test_a_bar_that_would_serve_an_unscored_kind_gives_no_area(run) -> None:
    partial = copy.deepcopy(run)
    del partial["per_trial_area"]["learnedmap"]  # the argmax serves it in some trials, z = 2 in none
    rows = {r["z"]: r for r in replay(partial, "partial")["rows"]}
    assert rows[0.0]["unscored"] == ["learnedmap"] and "area" not in rows[0.0]
    assert "area" in rows[2.0]


def test_a_run_the_rule_in_code_does_not_give_is_refused(run) -> None:
    other = copy.deepcopy(run)
    other["per_trial_selection"][0]["kind"] = "knn" if other["per_trial_selection"][0]["kind"] != "knn" else "kmeans"
    with pytest.raises(ValueError, match="does not give the stored auto"):
        replay(other, "other")
