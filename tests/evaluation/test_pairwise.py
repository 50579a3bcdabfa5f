"""The pairwise router in the protocol: arena-style battles from labels, tuning on battles, test curves."""

from __future__ import annotations

import numpy as np
import pytest

from tests.evaluation.synthetic import synthetic_embeddings, synthetic_long
from uniroute.evaluation import EvalConfig, eval_data_from_frame, evaluate, trial_split
from uniroute.evaluation.pairwise import PRIORS, sparse_battles, trial_battles


def test_sparse_battles_pair_two_labelled_models_and_the_better_score_wins() -> None:
    nan = np.nan
    scores = np.array([
        [1.0, 0.0, nan],  # models 0 and 1 are the only labelled pair
        [nan, 1.0, 1.0],  # 1 and 2: a tie
        [0.0, nan, nan],  # one label: no battle
        [0.2, 0.7, 0.7],
    ])
    battles = sparse_battles(scores, np.arange(4), np.arange(3), np.random.default_rng(0))
    assert battles.prompt.tolist() == [0, 1, 3]
    pairs = [frozenset(p) for p in zip(battles.a.tolist(), battles.b.tolist(), strict=True)]
    assert pairs[0] == {0, 1} and pairs[1] == {1, 2}
    for p, a, b, y in zip(battles.prompt, battles.a, battles.b, battles.y, strict=True):
        expected = 1.0 if scores[p, a] > scores[p, b] else 0.0 if scores[p, a] < scores[p, b] else 0.5
        assert y == expected
    # Only the models offered take part.
    only = sparse_battles(scores, np.arange(4), np.array([0, 2]), np.random.default_rng(0))
    assert only.prompt.tolist() == [3] and {only.a[0], only.b[0]} == {0, 2}


def test_a_trial_battles_training_llms_on_training_prompts_and_everyone_on_validation_prompts() -> None:
    data = eval_data_from_frame(synthetic_long(200))
    split = trial_split(data.routing, seed=0, trial=1)
    train, val = trial_battles(data.routing, split)
    assert set(train.prompt) <= set(split.train) and len(train.prompt) == len(split.train)
    assert set(train.a) | set(train.b) <= set(split.train_models)
    assert set(val.prompt) == set(split.val)
    assert set(val.a) | set(val.b) > set(split.train_models)  # test LLMs battle on validation prompts
    again = trial_battles(data.routing, split)
    assert np.array_equal(again[0].a, train.a) and np.array_equal(again[1].y, val.y)  # seeded by the trial


@pytest.mark.slow
def test_the_pairwise_router_beats_zero_routing_on_topic_data() -> None:
    data = eval_data_from_frame(synthetic_long(900, seed=2))
    X = synthetic_embeddings(data)
    config = EvalConfig(seed=0, methods=("zero", "kmeans", "pairwise"))
    report, _, results = evaluate(data, X, 4, config, workers=0)
    areas = {m: report["methods"][m]["area"] for m in config.methods}
    assert areas["pairwise"] > areas["zero"], areas
    assert areas["pairwise"] < areas["kmeans"] + 0.02, areas  # sparse battles carry less than every label
    for r in results:
        tuning = r["tuning"]["pairwise"]
        assert str(tuning["value"]) in tuning["areas"] and tuning["prior"] in PRIORS
        assert all(v < 0 for v in tuning["areas"].values())  # mean log-likelihoods per battle
    assert sum(report["k"]["pairwise"]["prior_counts"].values()) == 4
