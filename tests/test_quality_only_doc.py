"""The quality-only page pairs a served run and a rules run only when they are the same trials."""

from __future__ import annotations

import pytest

from benchmarks.quality.quality_only import merged


def _report(methods: dict[str, list[float]], best: list[float], seed: int = 0) -> dict:
    return {"seed": seed, "trials": len(best), "trial_seconds_mean": 1.0,
            "methods": {m: {"score": sum(v) / len(v), "label": m} for m, v in methods.items()},
            "per_trial_score": methods, "best_single_llm": {"score": sum(best) / len(best), "per_trial": best}}


def test_same_trials_merge_with_sign_tests_across_the_runs() -> None:
    served = _report({"zero": [0.5, 0.5], "kmeans": [0.6, 0.5], "auto": [0.6, 0.6]}, [0.55, 0.55])
    rules = _report({"zero": [0.5, 0.5], "kmeans": [0.6, 0.5], "quality_rule": [0.7, 0.7]}, [0.55, 0.55])
    out = merged(served, rules)
    assert list(out["methods"]) == ["zero", "kmeans", "auto", "quality_rule"]
    assert out["sign_tests"]["auto_vs_quality_rule"]["losses"] == 2
    assert out["sign_tests_vs_best_single_llm"]["quality_rule"]["wins"] == 2


def test_other_trials_are_refused() -> None:
    served = _report({"zero": [0.5, 0.5], "kmeans": [0.6, 0.5], "auto": [0.6, 0.6]}, [0.55, 0.55])
    with pytest.raises(ValueError, match="kmeans's per-trial scores"):
        merged(served, _report({"zero": [0.5, 0.5], "kmeans": [0.6, 0.4]}, [0.55, 0.55]))
    with pytest.raises(ValueError, match="seed"):
        merged(served, _report({"zero": [0.5, 0.5], "kmeans": [0.6, 0.5]}, [0.55, 0.55], seed=1))
    with pytest.raises(ValueError, match="best single"):
        merged(served, _report({"zero": [0.5, 0.5], "kmeans": [0.6, 0.5]}, [0.55, 0.56]))
