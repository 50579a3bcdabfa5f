"""`auto`'s rule: the default kind unless another beats it by more than Z paired standard errors, and the README's
stored runs served what that rule in code serves (so their `auto` figures are this rule's, and replaying another z
on them, benchmarks/quality/auto_threshold.py, starts from the truth)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.quality.auto_threshold import replayed_choices
from uniroute.selection.selection import Z, clear_choice

RESULTS = Path(__file__).resolve().parents[2] / "docs" / "results"


def test_the_default_stays_unless_another_kind_clears_the_bar() -> None:
    area = {"hier": 0.80, "knn": 0.81, "kmeans": 0.812}
    assert clear_choice(area, "hier", {"hier": 0.0, "knn": 0.006, "kmeans": 0.007}, z=2) == "hier"  # leads short
    assert clear_choice(area, "hier", {"hier": 0.0, "knn": 0.004, "kmeans": 0.007}, z=2) == "knn"  # only knn clears
    assert clear_choice(area, "hier", {"hier": 0.0, "knn": 0.001, "kmeans": 0.001}, z=2) == "kmeans"  # the best clear
    assert clear_choice(area, "hier", {"hier": 0.0, "knn": 0.005, "kmeans": 0.006}, z=0) == "kmeans"  # z 0: argmax
    assert clear_choice({"hier": 0.8, "knn": 0.801}, "hier", {"hier": 0.0, "knn": 0.0006}, z=2) == "hier"  # under


@pytest.mark.parametrize("dataset", ["routerbench_subset", "mmlu_pro_cot29", "routerdc_model7"])
def test_the_readmes_runs_served_what_the_rule_in_code_serves(dataset: str) -> None:
    run = json.loads((RESULTS / f"{dataset}.json").read_text())
    areas = run["per_trial_area"]
    for t, (sel, chosen) in enumerate(zip(run["per_trial_selection"], replayed_choices(run, Z), strict=True)):
        assert chosen == sel["kind"], (dataset, t, chosen, sel["kind"])
        assert areas[chosen][t] == areas["auto"][t], (dataset, t, chosen)
