"""Transfer across logs and quality-only evaluation: hand-checked data assembly, trials, the CLI."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from tests.synthetic_logs import TOPIC_WORDS, synthetic_embeddings, synthetic_long
from uniroute.experiments.logs import eval_data_from_frame
from uniroute.experiments.pairwise_protocol import arena_battles_frame
from uniroute.experiments.quality import unit_cost_data
from uniroute.experiments.transfer import TransferConfig, pairwise_log_from_frame, transfer_data, transfer_split
from uniroute.experiments.transfer_run import evaluate_transfer, read_log


def _long(rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["prompt_id", "prompt", "model", "score", "cost"])


def test_transfer_data_keeps_the_shared_llms_and_the_fully_labelled_test_prompts() -> None:
    train = eval_data_from_frame(_long([
        ("t1", "A", "x", 1.0, 1.0), ("t1", "A", "y", 0.0, 2.0), ("t1", "A", "only-train", 1.0, 1.0),
        ("t2", "B", "x", 0.0, 1.0), ("t2", "B", "y", 1.0, 2.0),
    ]))
    test = eval_data_from_frame(_long([
        ("s1", "C", "x", 1.0, 3.0), ("s1", "C", "y", 1.0, 5.0), ("s1", "C", "only-test", 0.0, 1.0),
        ("s2", "D", "x", 0.0, 3.0),  # y has no label on s2: not a test prompt
        ("s3", "E", "x", 0.0, 3.0), ("s3", "E", "y", 1.0, 5.0),
    ]))
    data = transfer_data(train, test)
    assert data.routing.models == ("x", "y") and data.n_train_prompts == 2 and data.dropped_test_prompts == 1
    assert data.prompts == ("A", "B", "C", "E")
    np.testing.assert_array_equal(data.routing.scores, [[1, 0], [0, 1], [1, 1], [0, 1]])
    np.testing.assert_array_equal(data.routing.costs, [[1, 2], [1, 2], [3, 5], [3, 5]])
    assert data.costs_from.startswith("training log") and data.router_costs is None
    # Without costs in the training log, the router is told the test log's mean cost of each model.
    costless = unit_cost_data(_long([("t1", "A", "x", 1.0, None), ("t1", "A", "y", 0.0, None)]))
    priced = transfer_data(costless, test, train_costs=False)
    assert priced.costs_from.startswith("test log") and priced.router_costs.tolist() == [3.0, 5.0]
    quality = transfer_data(train, test, test_costs=False)
    assert quality.quality_only and quality.router_costs.tolist() == [1.0, 1.0]


def test_transfer_data_refuses_too_few_shared_llms_and_shared_prompts() -> None:
    a = eval_data_from_frame(_long([("p", "A", "x", 1.0, 1.0), ("p", "A", "y", 1.0, 1.0)]))
    b = eval_data_from_frame(_long([("q", "B", "x", 1.0, 1.0), ("q", "B", "z", 1.0, 1.0)]))
    with pytest.raises(ValueError, match=r"share 1 LLMs \(\['x'\]\); transfer needs at least 2"):
        transfer_data(a, b)
    with pytest.raises(ValueError, match=r"share 1 prompts \(e\.g\. 'p'\)"):
        transfer_data(a, a)


def _topic_split(n: int = 400, seed: int = 1) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The synthetic log split by topic word: prompts of topics 0-1 train, the rest test (a prompt shift)."""
    frame = synthetic_long(n, seed=seed)
    first_topic = frame["prompt"].str.split().str[2].map(
        {w: t for t, words in enumerate(TOPIC_WORDS) for w in words})
    frame = frame.assign(benchmark=np.where(first_topic < 2, "early", "late"))
    return frame[frame.benchmark == "early"], frame[frame.benchmark == "late"]


def _embed(data) -> np.ndarray:
    return synthetic_embeddings(type("D", (), {"prompts": data.prompts})())


def test_transfer_split_is_seeded_disjoint_and_sized() -> None:
    train, test = _topic_split()
    data = transfer_data(eval_data_from_frame(train), eval_data_from_frame(test))
    config = TransferConfig(seed=3, test_fraction=0.5)
    a, b = transfer_split(data, config, 0), transfer_split(data, config, 0)
    assert np.array_equal(a.test, b.test) and np.array_equal(a.val, b.val)
    n1 = data.n_train_prompts
    assert set(a.train) | set(a.val) == set(range(n1)) and not set(a.train) & set(a.val)
    assert len(a.val) == round(0.1 * n1) and a.test.min() >= n1
    assert len(a.test) == round(0.5 * (data.n_prompts - n1))
    assert not np.array_equal(transfer_split(data, config, 1).test, a.test)


@pytest.mark.parametrize("pairwise", [pytest.param(False, marks=pytest.mark.slow), True])  # slow: torch
def test_a_transfer_run_reports_every_method_with_the_usual_metrics(pairwise: bool) -> None:
    train, test = _topic_split()
    train_log = pairwise_log_from_frame(_checked(arena_battles_frame(train))) if pairwise \
        else eval_data_from_frame(train)
    data = transfer_data(train_log, eval_data_from_frame(test), train_costs=not pairwise)
    methods = ("zero", "knn", "kmeans") if pairwise else ("zero", "knn", "kmeans", "learnedmap")
    report, results = evaluate_transfer(data, _embed(data), 2, TransferConfig(seed=0, methods=methods), workers=0)
    assert report["transfer"] and report["train_evidence"] == ("pairwise" if pairwise else "pointwise")
    assert set(report["methods"]) == set(methods) and report["trials"] == 2
    for s in report["methods"].values():
        assert 0 < s["area"] <= s["peak"] <= 1
    for r in results:
        assert r["train_models"] == r["test_models"] == list(data.routing.models)
        assert set(r["tuning"]) == set(methods) - {"zero"}
        assert all(str(t["value"]) in t["areas"] for t in r["tuning"].values())


def _checked(battles: pd.DataFrame) -> pd.DataFrame:
    """Arena battles with the preference column the evaluation reads (winner -> outcome for model_a)."""
    outcome = {"model_a": 1.0, "model_b": 0.0, "tie": 0.5, "tie (bothbad)": 0.5}
    return battles.assign(preference=battles.winner.map(outcome))


def test_a_test_log_without_costs_gives_a_quality_only_report() -> None:
    train, test = _topic_split()
    data = transfer_data(eval_data_from_frame(train), unit_cost_data(test.assign(cost=None)), test_costs=False)
    report, results = evaluate_transfer(data, _embed(data), 2, TransferConfig(seed=0, methods=("zero", "kmeans")),
                                        workers=0)
    assert report["quality_only"] and "area" not in report["methods"]["kmeans"]
    for m, s in report["methods"].items():
        assert s["score"] <= report["oracle"]["score"], m
    assert report["best_single_llm"]["score"] <= report["oracle"]["score"]
    # ZeroRouter with equal costs routes everything to the LLM best on the validation prompts.
    for r, score in zip(results, report["per_trial_score"]["zero"], strict=True):
        assert any(score == pytest.approx(s) for s in r["llm_points"]["score"])


def test_cli_transfer_from_a_pairwise_file_and_quality_only_evaluate(tmp_path, home, monkeypatch) -> None:
    from typer.testing import CliRunner

    from uniroute.cli import app

    monkeypatch.setenv("UNIROUTE_HOME", str(home))
    train, test = _topic_split()
    battles = tmp_path / "battles.jsonl"
    arena_battles_frame(train).to_json(battles, orient="records", lines=True)
    test_path = tmp_path / "test.parquet"
    test.to_parquet(test_path)
    out = tmp_path / "transfer.json"
    result = CliRunner().invoke(app, [
        "evaluate", "--data", str(battles), "--test-data", str(test_path), "--trials", "2", "--workers", "0",
        "--embedder", "tfidf", "--methods", "zero,kmeans,learnedmap", "--out", str(out)])
    assert result.exit_code == 0, result.output
    saved = json.loads(out.read_text())
    assert saved["train_evidence"] == "pairwise" and set(saved["methods"]) == {"zero", "kmeans"}
    assert out.with_suffix(".png").exists()
    log_path = tmp_path / "costless.parquet"
    pd.concat([train, test]).assign(cost=None).to_parquet(log_path)
    quality = tmp_path / "quality.json"
    result = CliRunner().invoke(app, ["evaluate", "--data", str(log_path), "--trials", "2", "--workers", "0",
                                      "--embedder", "tfidf", "--methods", "zero,kmeans", "--out", str(quality)])
    assert result.exit_code == 0, result.output
    assert "mean test score (lambda = 0)" in result.output and "oracle" in result.output
    report = CliRunner().invoke(app, ["report", str(quality)])
    assert report.exit_code == 0 and "best single test LLM" in report.output


def test_read_log_selects_benchmarks_and_names_unknown_ones(tmp_path) -> None:
    train, _ = _topic_split()
    path = tmp_path / "log.parquet"
    train.to_parquet(path)
    log, costed = read_log(path, ["early"])
    assert costed and log.routing.n_prompts == train.prompt_id.nunique()
    with pytest.raises(ValueError, match=r"unknown benchmarks \['nope'\]; the file has \['early'\]"):
        read_log(path, ["nope"])


def test_oracle_is_the_mean_best_score_of_the_test_llms_by_hand() -> None:
    from uniroute.experiments.quality import oracle_scores
    from uniroute.selection.data import RoutingData

    scores = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [1.0, 1.0, 0.0]])
    data = RoutingData(("a", "b", "c"), scores, np.ones_like(scores))
    assert oracle_scores(data, np.array([0, 1, 2]), np.array([0, 1])) == pytest.approx(2 / 3)
    assert oracle_scores(data, np.array([1, 2]), np.array([1, 2])) == pytest.approx(1.0)
