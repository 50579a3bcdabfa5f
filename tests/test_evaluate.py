"""Evaluation protocol and metrics: hand-checked curve fixtures, the sign test, the trial pipeline."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from uniroute.evaluate import (
    Curve,
    RoutingData,
    candidate_grid,
    curve_area,
    curve_metrics,
    eval_data_from_frame,
    kmeans_candidates,
    knn_candidates,
    knn_gammas,
    lambda_grid,
    nearest_order,
    reach_cost,
    routed_points,
    sign_test,
    switch_path,
    trial_split,
    upper_envelope,
)

# ---- curve envelope, interpolation, Area, QNC on a hand-checked fixture -------------------------------------
# Points (cost, score): (0.5, 0.4) is dominated by (0.2, 0.5); (0.8, 0.7) by (0.5, 0.7); (0.5, 0.7) beats
# (0.5, 0.4) at equal cost. The envelope is (0.2, 0.5) - (0.5, 0.7) - (1.0, 0.9).
POINTS_COST = [0.5, 0.2, 0.8, 1.0, 0.5]
POINTS_SCORE = [0.4, 0.5, 0.7, 0.9, 0.7]


@pytest.fixture
def curve() -> Curve:
    return upper_envelope(np.array(POINTS_COST), np.array(POINTS_SCORE))


def test_envelope_drops_dominated_points(curve: Curve) -> None:
    np.testing.assert_array_equal(curve.cost, [0.2, 0.5, 1.0])
    np.testing.assert_array_equal(curve.score, [0.5, 0.7, 0.9])


def test_envelope_of_one_point_and_equal_scores() -> None:
    single = upper_envelope(np.array([0.3]), np.array([0.6]))
    assert single.cost.tolist() == [0.3] and single.score.tolist() == [0.6]
    flat = upper_envelope(np.array([0.6, 0.3, 0.9]), np.array([0.5, 0.5, 0.5]))  # equal scores: cheapest only
    assert flat.cost.tolist() == [0.3] and flat.score.tolist() == [0.5]


def test_interpolation_is_linear_and_constant_beyond_the_ends(curve: Curve) -> None:
    np.testing.assert_allclose(curve.at(np.array([0.0, 0.2, 0.35, 0.5, 0.75, 1.0, 1.3])),
                               [0.5, 0.5, 0.6, 0.7, 0.8, 0.9, 0.9])


def test_area_and_area50(curve: Curve) -> None:
    # [0, 0.2] flat at 0.5: 0.1; [0.2, 0.5] trapezoid (0.5 + 0.7) / 2 * 0.3 = 0.18; [0.5, 1] (0.7 + 0.9) / 2 * 0.5 = 0.4
    assert curve_area(curve) == pytest.approx(0.68)
    assert curve_area(curve, 0.0, 0.5) == pytest.approx(0.28)
    # a window that cuts a segment in the middle: [0.35, 0.75] = (0.6 + 0.7)/2 * 0.15 + (0.7 + 0.8)/2 * 0.25
    assert curve_area(curve, 0.35, 0.75) == pytest.approx(0.0975 + 0.1875)


def test_area_counts_a_curve_that_extends_beyond_cost_one_only_up_to_one() -> None:
    c = upper_envelope(np.array([0.5, 1.5]), np.array([0.5, 1.0]))  # at cost 1: 0.75
    assert curve_area(c) == pytest.approx(0.25 + (0.5 + 0.75) / 2 * 0.5)


def test_qnc_interpolated_at_vertex_never_and_at_first_point(curve: Curve) -> None:
    # interpolated: 0.8 is reached half-way between 0.5 and 1.0; the best LLM costs 1.0
    assert curve_metrics(curve, best_score=0.8, best_cost=1.0)["qnc"] == pytest.approx(0.75)
    # exactly at a vertex, relative to a best LLM at cost 0.5
    assert curve_metrics(curve, best_score=0.7, best_cost=0.5)["qnc"] == pytest.approx(1.0)
    # never reached
    assert math.isinf(curve_metrics(curve, best_score=0.95, best_cost=1.0)["qnc"])
    # already reached by the cheapest point: its cost, not the flat extrapolation to 0
    assert reach_cost(curve, 0.4) == pytest.approx(0.2)


def test_peak_and_area_in_metrics(curve: Curve) -> None:
    m = curve_metrics(curve, best_score=0.8, best_cost=1.0)
    assert m["peak"] == pytest.approx(0.9)
    assert m["area"] == pytest.approx(0.68) and m["area50"] == pytest.approx(0.28)


def test_envelope_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="non-empty"):
        upper_envelope(np.array([]), np.array([]))
    with pytest.raises(ValueError, match="finite"):
        upper_envelope(np.array([0.1, np.nan]), np.array([0.1, 0.2]))


# ---- routing along lambda ---------------------------------------------------------------------------------
def test_routed_points_on_a_two_prompt_fixture() -> None:
    # Two models: A cheap (cost 0.2), B expensive (1.0). gamma: prompt 0 prefers B by 0.4, prompt 1 by 0.1.
    # Switch to A at lambda = 0.4 / 0.8 = 0.5 (prompt 0) and 0.1 / 0.8 = 0.125 (prompt 1).
    gamma = np.array([[0.6, 0.2], [0.5, 0.4]])
    costs = np.array([0.2, 1.0])
    scores = np.array([[0.0, 1.0], [1.0, 1.0]])
    prompt_costs = np.array([[0.2, 1.0], [0.2, 1.0]])
    path = switch_path(gamma, costs)
    assert path.start.tolist() == [1, 1]
    np.testing.assert_allclose(path.lam, [0.125, 0.5])
    assert path.row.tolist() == [1, 0] and path.new.tolist() == [0, 0]
    grid = lambda_grid(path, n_lambdas=5)
    assert grid[0] == 0 and grid[1] == pytest.approx(0.125) and grid[-1] == pytest.approx(0.5)
    cost, score = routed_points(gamma, costs, scores, prompt_costs, n_lambdas=5)
    # lambda 0: both on B (cost 1, score 1); after 0.125: prompt 1 on A (cost 0.6, score 1); after 0.5: both on A
    assert (cost[0], score[0]) == pytest.approx((1.0, 1.0))
    assert (cost[1], score[1]) == pytest.approx((0.6, 1.0))
    assert (cost[-1], score[-1]) == pytest.approx((0.2, 0.5))
    env = upper_envelope(cost, score)
    np.testing.assert_allclose(env.cost, [0.2, 0.6])
    np.testing.assert_allclose(env.score, [0.5, 1.0])


def test_ties_go_to_the_cheaper_model() -> None:
    gamma = np.array([[0.3, 0.3, 0.3]])
    costs = np.array([0.5, 0.1, 0.1])  # models 1 and 2 equally cheap: the lower index wins
    path = switch_path(gamma, costs)
    assert path.start.tolist() == [1] and path.lam.size == 0
    assert lambda_grid(path).tolist() == [0.0]


def test_routed_points_match_brute_force_argmin_on_random_data() -> None:
    rng = np.random.default_rng(3)
    n, m = 60, 6
    gamma = rng.random((n, m)).round(2)  # rounded: exact ties occur
    costs = np.array([0.1, 0.3, 0.3, 0.5, 0.8, 1.0])
    scores = (rng.random((n, m)) > 0.4).astype(float)
    prompt_costs = costs * rng.uniform(0.5, 1.5, (n, m))
    cost, score = routed_points(gamma, costs, scores, prompt_costs, n_lambdas=200)
    lams = lambda_grid(switch_path(gamma, costs), 200)
    assert lams.size == 201
    for j, lam in enumerate(lams):
        val = gamma + lam * costs
        # brute force with the contract's tie rule: smallest value, then cheaper, then lower index
        choice = np.array([min(range(m), key=lambda k, r=r: (val[r, k], costs[k], k)) for r in range(n)])
        assert score[j] == pytest.approx(scores[np.arange(n), choice].mean(), abs=1e-12)
        assert cost[j] == pytest.approx(prompt_costs[np.arange(n), choice].mean(), abs=1e-12)
    # the grid spans the best-quality routing (lambda 0) and the cheapest one (every prompt on model 0)
    assert cost[-1] == pytest.approx(prompt_costs[:, 0].mean())


# ---- sign test --------------------------------------------------------------------------------------------
def test_sign_test_counts_and_exact_p() -> None:
    a = [1, 2, 3, 4, 5, 6, 9]
    b = [0, 0, 0, 0, 0, 7, 9]  # last pair tied: dropped
    res = sign_test(a, b)
    assert res["wins"] == 5 and res["losses"] == 1
    # two-sided exact binomial, n = 6: P(X <= 1) + P(X >= 5) = (1 + 6 + 6 + 1) / 64
    assert res["p"] == pytest.approx(14 / 64)
    assert sign_test([1, 1], [1, 1]) == {"wins": 0, "losses": 0, "p": 1.0}
    assert sign_test([1] * 20, [0] * 20)["p"] == pytest.approx(2 * 0.5**20)
    with pytest.raises(ValueError, match="equal shapes"):
        sign_test([1, 2], [1])


# ---- hyper-parameter grids ----------------------------------------------------------------------------------
def test_candidate_grids_include_both_ends() -> None:
    assert knn_candidates(1203) == [5, 10, 20, 40, 80, 160, 401]
    assert kmeans_candidates(1203) == [3, 4, 7, 10, 15, 24]
    assert kmeans_candidates(100) == [3]  # n_val / 50 < 3: K = 3 only
    assert knn_candidates(25) == [5, 8]
    assert candidate_grid(5, 4, 2.0) == [5]
    for n_val in (60, 316, 1203, 2057):
        ks = kmeans_candidates(n_val)
        assert ks[0] == 3 and ks[-1] == max(3, n_val // 50) and ks == sorted(set(ks))


# ---- K-NN gamma -------------------------------------------------------------------------------------------
def test_knn_gammas_skip_missing_labels_and_fall_back() -> None:
    X_ref = np.eye(4, dtype=np.float32)
    X_query = np.array([[1.0, 0.1, 0.0, 0.0]], dtype=np.float32)
    X_query /= np.linalg.norm(X_query)
    order = nearest_order(X_query, X_ref, 3)
    assert order[0, :2].tolist() == [0, 1]
    losses = np.array([[1.0, np.nan], [0.0, np.nan], [1.0, 1.0], [0.0, 0.0]])
    g = knn_gammas(order, losses, [1, 2, 3])
    # model 1 has no label on refs 0 and 1: its mean loss over the refs (0.5) until ref 2 enters at k = 3
    assert g[1][0].tolist() == [1.0, 0.5]
    assert g[2][0].tolist() == [0.5, 0.5]
    assert g[3][0].tolist() == [pytest.approx(2 / 3), 1.0]


# ---- data pivot -------------------------------------------------------------------------------------------
def test_pivot_excludes_costless_models_and_fills_partial_costs() -> None:
    frame = pd.DataFrame(
        {
            "prompt_id": ["p2", "p1", "p1", "p2", "p1", "p2", "p1"],
            "prompt": ["two", "one", "one", "two", "one", "two", "one"],
            "model": ["a", "a", "b", "b", "c", "c", "d"],
            "score": [1.0, 0.0, 1.0, 0.5, 1.0, 0.0, 1.0],
            "cost": [2.0, 4.0, 1.0, None, None, None, 5.0],
        }
    )
    data = eval_data_from_frame(frame)
    assert data.excluded_models == ("c",)
    assert data.routing.models == ("a", "b", "d")
    assert data.prompt_ids == ("p1", "p2") and data.prompts == ("one", "two")
    np.testing.assert_array_equal(data.routing.scores, [[0.0, 1.0, 1.0], [1.0, 0.5, np.nan]])
    np.testing.assert_array_equal(data.routing.costs, [[4.0, 1.0, 5.0], [2.0, 1.0, np.nan]])
    assert data.filled_costs == 1


def test_pivot_rejects_duplicates_and_bad_scores() -> None:
    base = {"prompt_id": ["p", "p"], "prompt": ["x", "x"], "model": ["a", "a"], "cost": [1.0, 1.0]}
    with pytest.raises(ValueError, match="repeat"):
        eval_data_from_frame(pd.DataFrame({**base, "score": [1.0, 0.0]}))
    with pytest.raises(ValueError, match=r"outside \[0, 1\]"):
        eval_data_from_frame(pd.DataFrame({**base, "model": ["a", "b"], "score": [1.5, 0.0]}))


# ---- trial split --------------------------------------------------------------------------------------------
def test_trial_split_sizes_roles_and_seeding() -> None:
    rng = np.random.default_rng(0)
    n, m = 200, 7
    scores = (rng.random((n, m)) > 0.5).astype(float)
    scores[:20, 0] = np.nan  # model 0 misses 20 prompts
    costs = np.where(np.isnan(scores), np.nan, 1.0)
    data = RoutingData(models=tuple(f"m{i}" for i in range(m)), scores=scores, costs=costs)
    s = trial_split(data, seed=0, trial=1)
    assert len(s.train_models) == 3 and len(s.test_models) == 4  # fewer than 12 LLMs: half (rounded down)
    assert set(s.train_models) | set(s.test_models) == set(range(m))
    assert len(s.train) == 120 and len(s.val) == 20
    assert not set(s.train) & set(s.val) and not set(s.test) & (set(s.train) | set(s.val))
    assert not np.isnan(scores[np.ix_(s.test, s.test_models)]).any()
    again = trial_split(data, seed=0, trial=1)
    assert np.array_equal(again.val, s.val) and again.fit_seed == s.fit_seed
    assert not np.array_equal(trial_split(data, seed=0, trial=2).val, s.val)
    big = RoutingData(models=tuple(f"m{i}" for i in range(12)), scores=np.zeros((10, 12)), costs=np.ones((10, 12)))
    assert len(trial_split(big, 0, 0).train_models) == 8


# ---- the whole pipeline on tiny synthetic data ---------------------------------------------------------------
TOPIC_WORDS = [
    ["integral", "derivative", "matrix", "prime", "equation", "theorem"],
    ["python", "function", "loop", "compile", "array", "recursion"],
    ["enzyme", "protein", "cell", "membrane", "gene", "mitosis"],
    ["treaty", "empire", "revolution", "dynasty", "parliament", "war"],
]


def synthetic_long(n_prompts: int = 300, n_models: int = 8, seed: int = 0) -> pd.DataFrame:
    """Prompts from 4 topics (text made of topic words); each model is strong on some topics; one has no cost."""
    rng = np.random.default_rng(seed)
    topic = rng.integers(0, len(TOPIC_WORDS), n_prompts)
    skill = rng.uniform(0.1, 0.95, (n_models, len(TOPIC_WORDS)))
    base_cost = np.linspace(1.0, 8.0, n_models)
    rows = []
    for i in range(n_prompts):
        words = rng.choice(TOPIC_WORDS[topic[i]], 5).tolist() + [f"w{rng.integers(50)}"]
        text = f"question {i}: " + " ".join(words)
        for m in range(n_models):
            cost = None if m == n_models - 1 else float(base_cost[m] * rng.uniform(0.9, 1.1))
            rows.append((f"p{i:04d}", text, f"model-{m}", float(rng.random() < skill[m, topic[i]]), cost))
    return pd.DataFrame(rows, columns=["prompt_id", "prompt", "model", "score", "cost"])


def synthetic_embeddings(data, seed: int = 0):
    """Embeddings that carry the topic: a bag of topic words projected to 16 dimensions, L2-normalised."""
    rng = np.random.default_rng(seed)
    vocab = {w: j for j, w in enumerate(w for ws in TOPIC_WORDS for w in ws)}
    proj = rng.standard_normal((len(vocab), 16))
    X = np.zeros((len(data.prompts), 16))
    for i, text in enumerate(data.prompts):
        for w in text.split():
            if w in vocab:
                X[i] += proj[vocab[w]]
    X += 0.3 * rng.standard_normal(X.shape)
    return (X / np.linalg.norm(X, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def synthetic():
    data = eval_data_from_frame(synthetic_long())
    return data, synthetic_embeddings(data)


def test_three_trials_in_process_report(synthetic) -> None:
    from uniroute.evaluate import METHODS, EvalConfig, evaluate

    data, X = synthetic
    assert data.excluded_models == ("model-7",)
    config = EvalConfig(seed=0, val_sizes=(10,), oracle_epochs=3)
    report, study, results = evaluate(data, X, 3, config, workers=0)
    assert report["trials"] == 3 and len(results) == 3
    assert set(report["methods"]) == set(METHODS)
    for s in report["methods"].values():
        assert 0 < s["area50"] < s["area"] <= s["peak"] <= 1
        assert 0 <= s["qnc_inf_frac"] <= 1
    assert len(report["sign_tests"]) == 15
    for t in report["sign_tests"].values():
        assert t["wins"] + t["losses"] <= 3 and 0 < t["p"] <= 1
    for m in ("knn", "kmeans", "learnedmap"):
        assert sum(report["k"][m]["chosen_counts"].values()) == 3
    assert report["k"]["kmeans"]["candidates"] == [3]  # 30 val prompts: n_val / 50 < 3
    assert report["k"]["knn"]["candidates"] == [5, 10]
    # Prompts routed by topic beat the input-blind ZeroRouter on data whose skills differ by topic.
    for m in ("knn", "kmeans", "learnedmap", "mlp"):
        assert report["methods"][m]["area"] > report["methods"]["zero"]["area"], m
    assert study is not None and study["sizes"] == [10, 30]
    assert len(study["methods"]["knn"]["mean"]) == 2 and all(h >= 0 for h in study["methods"]["knn"]["half_width"])


def test_dask_workers_give_the_in_process_results(synthetic) -> None:
    from uniroute.evaluate import EvalConfig, trial_results

    data, X = synthetic
    # zero/knn/kmeans: the workers then need no torch import, which alone takes tens of seconds here.
    config = EvalConfig(seed=5, methods=("zero", "knn", "kmeans"), val_sizes=(12,))
    local = trial_results(X, data.routing, 2, config, workers=0)
    dask = trial_results(X, data.routing, 2, config, workers=2)
    for a, b in zip(local, dask, strict=True):
        assert a["trial"] == b["trial"] and a["test_models"] == b["test_models"]
        assert a["chosen"] == b["chosen"] and a["valsize"] == b["valsize"]
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


def test_summary_table_marks_significantly_lower_areas() -> None:
    from uniroute.evaluate import sign_test_table, summary_table

    def stats(area: float) -> dict:
        return {"area": area, "area50": area / 2, "qnc": 0.5, "qnc_inf_frac": 0.1, "peak": 0.9, "label": "x"}

    report = {
        "methods": {"zero": stats(0.6), "knn": stats(0.7), "kmeans": stats(0.71)},
        "sign_tests": {
            "zero_vs_knn": {"wins": 0, "losses": 20, "p": 2 * 0.5**20},
            "zero_vs_kmeans": {"wins": 1, "losses": 19, "p": 4e-5},
            "knn_vs_kmeans": {"wins": 8, "losses": 12, "p": 0.5},
        },
    }
    rows = summary_table(report).splitlines()
    assert rows[2].startswith("| x | 0.6000† |")  # zero: significantly below K-means (no LearnedMap here)
    assert "| 0.7000 |" in rows[3] and "| 0.7100 |" in rows[4]  # not significant: no mark
    assert "| 50.0% | 10% | 0.9000 |" in rows[2]
    table = sign_test_table(report)
    assert "| ZeroRouter vs K-NN | 0 | 20 | 1.9e-06 | B better |" in table
    assert "| K-NN vs UniRoute (K-means) | 8 | 12 | 0.5 | no |" in table


def test_curve_points_are_those_of_the_products_router() -> None:
    """The evaluation's routing along lambda is Router.route's rule (costs scaled by C, lambda by 1/C)."""
    from uniroute.cluster import Centroids
    from uniroute.route import Router

    rng = np.random.default_rng(7)
    centers = rng.standard_normal((5, 8)).astype(np.float32)
    psi = rng.random((4, 5)).round(1)  # rounded: clusters tie between models
    costs = np.array([2.0, 0.5, 8.0, 0.5])
    router = Router(embedder_id="test", models=("a", "b", "c", "d"), costs=costs, psi=psi,
                    assigner=Centroids(centers=centers))
    X = rng.standard_normal((40, 8)).astype(np.float32)
    scores = (rng.random((40, 4)) > 0.5).astype(float)
    norm = costs.max()
    gamma = router.gamma(X)
    cost, score = routed_points(gamma, costs / norm, scores, np.tile(costs / norm, (40, 1)), n_lambdas=50)
    for lam, c, s in zip(lambda_grid(switch_path(gamma, costs / norm), 50), cost, score, strict=True):
        chosen = router.route(X, lam / norm)
        assert s == pytest.approx(scores[np.arange(40), chosen].mean())
        assert c == pytest.approx(costs[chosen].mean() / norm)
