"""The quality-only page pairs a served run and a rules run only when they are the same trials."""

from __future__ import annotations

import pytest

from tools.pages.quality_only import as_default, merged, rule_as_default


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


def test_the_other_default_is_replayed_from_the_recorded_resamples() -> None:
    # Trial 0: K-means beats the rule by 3 paired SEs; trial 1 by 1 SE only. The run's default was the rule.
    pair = [{"quality_rule": {"kmeans_shrunk": 0.01, "quality_rule": 0.0},
             "kmeans_shrunk": {"quality_rule": 0.01, "kmeans_shrunk": 0.0}}] * 2
    sel = [{"default": "quality_rule", "val_area": {"quality_rule": 0.50, "kmeans_shrunk": 0.53},
            "diff_se": {}, "pair_se": pair[0]},
           {"default": "quality_rule", "val_area": {"quality_rule": 0.50, "kmeans_shrunk": 0.51},
            "diff_se": {}, "pair_se": pair[1]}]
    report = {"per_trial_selection": sel, "best_single_llm": {"per_trial": [0.5, 0.5]},
              "per_trial_score": {"quality_rule": [0.52, 0.52], "kmeans_shrunk": [0.6, 0.4], "auto": [0.6, 0.52]}}
    assert as_default(report, "quality_rule") is None  # the run's own default: nothing to replay
    kmeans = rule_as_default(report)
    assert kmeans["default"] == "kmeans_shrunk" and kmeans["scores"] == [0.6, 0.4] and kmeans["rule_served"] == 0
    assert kmeans["exact"]
