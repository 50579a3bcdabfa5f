"""Evaluation protocol and metrics: hand-checked curve fixtures, the sign test, the trial pipeline."""

from __future__ import annotations

import re

import pytest

from tests.synthetic_logs import synthetic_embeddings, synthetic_long
from uniroute.experiments.logs import eval_data_from_frame


@pytest.fixture(scope="module")
def synthetic():
    data = eval_data_from_frame(synthetic_long())
    return data, synthetic_embeddings(data)


def test_three_trials_in_process_report(synthetic) -> None:
    from uniroute.experiments.methods import DEFAULT_METHODS
    from uniroute.experiments.protocol import EvalConfig
    from uniroute.experiments.runner import evaluate

    data, X = synthetic
    assert data.excluded_models == ("model-7",)
    config = EvalConfig(seed=0, val_sizes=(10,), oracle_epochs=3)
    report, study, results = evaluate(data, X, 3, config, workers=0)
    assert report["trials"] == 3 and len(results) == 3
    assert set(report["methods"]) == set(DEFAULT_METHODS)
    for s in report["methods"].values():
        assert 0 < s["area50"] < s["area"] <= s["peak"] <= 1
        assert 0 <= s["qnc_inf_frac"] <= 1
    assert len(report["sign_tests"]) == len(DEFAULT_METHODS) * (len(DEFAULT_METHODS) - 1) // 2
    for t in report["sign_tests"].values():
        assert t["wins"] + t["losses"] <= 3 and 0 < t["p"] <= 1
    for m in ("knn", "kmeans", "kmeans_shrunk", "learnedmap"):
        assert sum(report["k"][m]["chosen_counts"].values()) == 3
        assert report["grid_edges"][m]["at_edge"] == 0.0  # the ladder climbs until the Area turns down
    assert report["k"]["kmeans"]["searched"][0] == 1 and report["k"]["knn"]["searched"][0] == 1
    assert all(1 <= int(k) <= 30 for k in report["k"]["knn"]["chosen_counts"])  # at most the 30 val prompts
    # auto serves one of the kinds in every trial, and its Area is that kind's Area in that trial
    assert sum(report["auto"]["chosen_counts"].values()) == 3
    for r in results:
        chosen = r["selection"]["kind"]
        assert r["metrics"]["auto"]["area"] == r["metrics"][chosen]["area"]
        assert set(r["selection"]["val_area"]) == {"knn", "kmeans", "kmeans_shrunk", "learnedmap", "kmeans_hier"}
    # Prompts routed by topic beat the input-blind ZeroRouter on data whose skills differ by topic.
    for m in ("knn", "kmeans", "learnedmap", "auto", "mlp"):
        assert report["methods"][m]["area"] > report["methods"]["zero"]["area"], m
    assert study is not None and study["sizes"] == [10, 30]
    assert len(study["methods"]["knn"]["mean"]) == 2 and all(h >= 0 for h in study["methods"]["knn"]["half_width"])
    assert sum(study["chosen"]["auto"][0].values()) == 3


def test_dask_workers_give_the_in_process_results(synthetic) -> None:
    from uniroute.experiments.protocol import EvalConfig
    from uniroute.experiments.runner import trial_results

    data, X = synthetic
    # zero/knn/kmeans: the workers then need no torch import, which alone takes tens of seconds here.
    config = EvalConfig(seed=5, methods=("zero", "knn", "kmeans"), val_sizes=(12,))
    local = trial_results(X, data.routing, 2, config, workers=0)
    dask = trial_results(X, data.routing, 2, config, workers=2)
    for a, b in zip(local, dask, strict=True):
        assert a["trial"] == b["trial"] and a["test_models"] == b["test_models"]
        assert a["tuning"] == b["tuning"] and a["valsize"] == b["valsize"]
        for m in config.methods:
            assert a["metrics"][m] == pytest.approx(b["metrics"][m], rel=1e-12, abs=1e-12)


def test_cli_evaluate_three_trials_with_tfidf(tmp_path, home, monkeypatch) -> None:
    import json

    from typer.testing import CliRunner

    from uniroute.cli import app

    monkeypatch.setenv("UNIROUTE_HOME", str(home))
    data_path = tmp_path / "logs.jsonl"
    synthetic_long(n_prompts=240).to_json(data_path, orient="records", lines=True)
    out = tmp_path / "results" / "synthetic.json"
    args = ["evaluate", "--data", str(data_path), "--trials", "3", "--seed", "0", "--embedder", "tfidf",
            "--methods", "zero,knn,kmeans,learnedmap", "--workers", "0", "--val-sizes", "12,all", "--out", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "excluded" in result.stderr and "model-7" in result.stderr
    report = json.loads(out.read_text())
    assert report["trials"] == 3 and report["excluded_models"] == ["model-7"]
    assert set(report["methods"]) == {"zero", "knn", "kmeans", "learnedmap"}
    assert set(report["methods"]["kmeans"]) >= {"area", "area50", "qnc", "qnc_inf_frac", "peak"}
    assert set(report["sign_tests"]) == {f"{a}_vs_{b}" for i, a in enumerate(["zero", "knn", "kmeans", "learnedmap"])
                                         for b in ["zero", "knn", "kmeans", "learnedmap"][i + 1 :]}
    assert report["embedder_id"].startswith("tfidf") and report["seconds"] > 0
    assert out.with_suffix(".png").stat().st_size > 0
    study = json.loads((tmp_path / "results" / "synthetic_valsize.json").read_text())
    assert study["sizes"] == [12, 24] and set(study["methods"]) == {"knn", "kmeans", "learnedmap"}
    assert "auto" not in report["methods"] and report["auto"] is None
    assert (tmp_path / "results" / "synthetic_valsize.png").stat().st_size > 0
    # the same command again reads the embeddings from the store's cache and gives the same numbers
    again = CliRunner().invoke(app, [*args[:-1], str(tmp_path / "again.json")])
    assert again.exit_code == 0, again.output
    assert json.loads((tmp_path / "again.json").read_text())["per_trial_area"] == report["per_trial_area"]
    # `uniroute report` prints the saved result (and the study beside it) as the same Markdown
    printed = CliRunner().invoke(app, ["report", str(out)])
    assert printed.exit_code == 0, printed.output
    assert "| UniRoute (K-means) |" in printed.stdout and "sign test K-NN vs UniRoute (K-means)" in printed.stdout
    assert "| 12 | 24 (all) |" in printed.stdout
    not_a_result = CliRunner().invoke(app, ["report", str(data_path)])
    assert not_a_result.exit_code == 1 and "not an evaluation result" in not_a_result.stderr


def test_cli_evaluate_fails_in_one_line_on_bad_input(tmp_path, home, monkeypatch) -> None:
    from typer.testing import CliRunner

    from uniroute.cli import app

    monkeypatch.setenv("UNIROUTE_HOME", str(home))
    runner = CliRunner()
    out = str(tmp_path / "o.json")
    missing = runner.invoke(app, ["evaluate", "--data", str(tmp_path / "nope.parquet"), "--out", out])
    assert missing.exit_code == 1 and "no such file" in missing.stderr
    data_path = tmp_path / "logs.csv"
    synthetic_long(n_prompts=40).to_csv(data_path, index=False)
    bad = runner.invoke(app, ["evaluate", "--data", str(data_path), "--out", str(tmp_path / "o.json"),
                              "--methods", "zero,oracle9"])
    assert bad.exit_code == 1 and "unknown methods ['oracle9']" in bad.stderr
    # an --out that cannot be written is refused before the trials run, not with a traceback after them
    folder = runner.invoke(app, ["evaluate", "--data", str(data_path), "--out", str(tmp_path)])
    assert folder.exit_code == 1 and "a folder; name the JSON file" in folder.stderr, folder.output
    under_a_file = runner.invoke(app, ["evaluate", "--data", str(data_path), "--out", str(data_path / "o.json")])
    assert under_a_file.exit_code == 1 and "is not a writable folder" in under_a_file.stderr
    assert "prompts" not in folder.stderr + under_a_file.stderr  # nothing was loaded or embedded
    # a bad cell: pandas' own message names neither the file nor the row
    frame = synthetic_long(n_prompts=40).astype({"cost": object})
    frame.loc[5, "cost"] = "free"
    frame.to_csv(data_path, index=False)
    cell = runner.invoke(app, ["evaluate", "--data", str(data_path), "--out", out])
    assert cell.exit_code == 1 and f"{data_path}: data row 6: cost 'free' is not a number" in cell.stderr
    # models with results on a few prompts each (disjoint): no test prompt is complete, said in one line
    frame = synthetic_long(n_prompts=40)
    number = frame["prompt_id"].str[1:].astype(int)
    model = frame["model"].str.split("-").str[1].astype(int)
    frame[(model >= 6) | (number % 6 == model)].to_csv(data_path, index=False)
    sparse = runner.invoke(app, ["evaluate", "--data", str(data_path), "--out", out, "--trials", "1",
                                 "--workers", "0", "--embedder", "tfidf", "--methods", "zero,kmeans"])
    assert sparse.exit_code == 1 and "Traceback" not in sparse.output, sparse.output
    assert "no test prompt has a result from every test LLM" in sparse.stderr
    assert re.search(r"model 'model-[0-5]' has results on only [67] of 40 prompts", sparse.stderr)
