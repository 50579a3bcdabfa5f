"""Quality-only evaluation with costs dropped: the rules in a trial and `uniroute evaluate --drop-costs`."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from tests.synthetic_logs import synthetic_embeddings, synthetic_long
from uniroute.cli import app
from uniroute.experiments.protocol import EvalConfig
from uniroute.experiments.quality import quality_report, unit_cost_data
from uniroute.experiments.runner import evaluate
from uniroute.routers.quality_rule.kind import rule_k as quality_rule_k


def test_quality_only_evaluation_reports_the_rules() -> None:
    frame = synthetic_long()
    data = unit_cost_data(frame)
    X = synthetic_embeddings(data)
    config = EvalConfig(seed=0, methods=("zero", "kmeans", "quality_rule", "quality_rule_raw"))
    report, _, results = evaluate(data, X, 2, config, workers=0)
    out = quality_report(report, results, [1.0, 1.0])
    for m in ("quality_rule", "quality_rule_raw"):
        assert len(out["quality_rules"][m]["per_trial"]) == 2
        assert 0 <= out["quality_rules"][m]["switched_test_share_mean"] <= 1
        assert 0 < out["methods"][m]["score"] <= 1
    # The synthetic clusters have strong specialists, on a few validation prompts each: the empirical-Bayes rule
    # follows them where the per-cluster sign tests cannot reach significance.
    assert (out["quality_rules"]["quality_rule"]["switched_clusters_mean"]
            > out["quality_rules"]["quality_rule_raw"]["switched_clusters_mean"])


def test_cli_drop_costs_gives_the_quality_only_report(tmp_path, home, monkeypatch) -> None:
    monkeypatch.setenv("UNIROUTE_HOME", str(home))
    data_path = tmp_path / "logs.jsonl"
    synthetic_long(n_prompts=240).to_json(data_path, orient="records", lines=True)
    base = ["evaluate", "--data", str(data_path), "--trials", "2", "--workers", "0", "--embedder", "tfidf",
            "--methods", "zero,kmeans,quality_rule"]
    costed = CliRunner().invoke(app, [*base, "--out", str(tmp_path / "costed.json")])
    assert costed.exit_code == 0, costed.output
    assert "quality_only" not in json.loads((tmp_path / "costed.json").read_text())
    dropped = CliRunner().invoke(app, [*base, "--drop-costs", "--out", str(tmp_path / "dropped.json")])
    assert dropped.exit_code == 0, dropped.output
    report = json.loads((tmp_path / "dropped.json").read_text())
    assert report["quality_only"] and set(report["quality_rules"]) == {"quality_rule"}
    assert report["excluded_models"] == []  # model-7 has no cost: kept once costs play no part
    assert "best single test LLM" in dropped.output
    refused = CliRunner().invoke(app, [*base, "--drop-costs", "--test-data", str(data_path),
                                       "--out", str(tmp_path / "t.json")])
    assert refused.exit_code == 1 and "--drop-costs" in refused.stderr


def test_the_rule_clusters_about_fifty_validation_prompts_each() -> None:
    assert quality_rule_k(1203, 3, 7000) == 24
    assert quality_rule_k(30, 3, 100) == 3  # never below the tuned K
    assert quality_rule_k(5000, 1, 40) == 40  # nor more clusters than training prompts
