"""The pairwise router in the protocol: arena-style battles from labels, tuning on battles, test curves."""

from __future__ import annotations

import numpy as np
import pytest

from tests.synthetic_logs import synthetic_embeddings, synthetic_long
from uniroute.experiments.logs import eval_data_from_frame
from uniroute.experiments.pairwise_protocol import PRIORS, sparse_battles, trial_battles
from uniroute.experiments.protocol import EvalConfig, trial_split
from uniroute.experiments.runner import evaluate


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


def test_several_battles_per_prompt_are_disjoint_pairs_as_many_as_the_labels_allow() -> None:
    nan = np.nan
    scores = np.array([
        [1.0, 0.0, 1.0, 0.0, 1.0],  # five labels: two disjoint battles, one model sits out
        [1.0, 0.0, nan, 1.0, nan],  # three labels: one battle
        [0.0, 1.0, 1.0, 0.0, nan],  # four labels: two battles covering all four
        [nan, nan, 1.0, nan, nan],  # one label: none
    ])
    battles = sparse_battles(scores, np.arange(4), np.arange(5), np.random.default_rng(3), per_prompt=3)
    assert sorted(battles.prompt.tolist()) == [0, 0, 1, 2, 2]
    for p in (0, 2):
        mine = battles.prompt == p
        fighters = [*battles.a[mine].tolist(), *battles.b[mine].tolist()]
        assert len(set(fighters)) == 4  # disjoint: nobody fights twice on a prompt
    assert set(battles.a[battles.prompt == 2]) | set(battles.b[battles.prompt == 2]) == {0, 1, 2, 3}
    for p, a, b, y in zip(battles.prompt, battles.a, battles.b, battles.y, strict=True):
        assert not np.isnan(scores[p, a]) and not np.isnan(scores[p, b])
        expected = 1.0 if scores[p, a] > scores[p, b] else 0.0 if scores[p, a] < scores[p, b] else 0.5
        assert y == expected
    # One per prompt is the first battle of each prompt under several: the same seed draws the same arena log.
    one = sparse_battles(scores, np.arange(4), np.arange(5), np.random.default_rng(3))
    first = len(one.prompt)
    assert one.prompt.tolist() == [0, 1, 2]
    assert np.array_equal(one.a, battles.a[:first]) and np.array_equal(one.b, battles.b[:first])
    with pytest.raises(ValueError, match="battles per prompt must be >= 1, got 0"):
        sparse_battles(scores, np.arange(4), np.arange(5), np.random.default_rng(3), per_prompt=0)
    with pytest.raises(ValueError, match="battles per prompt must be >= 1"):
        EvalConfig(methods=("pairwise",), battles_per_prompt=0)


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
    dense_train, dense_val = trial_battles(data.routing, split, per_prompt=len(data.routing.models))
    # Every LLM in one battle per prompt: floor(M_tr / 2) battles per training prompt, floor(M / 2) per validation.
    assert len(dense_train.prompt) == len(split.train) * (len(split.train_models) // 2)
    assert len(dense_val.prompt) == len(split.val) * (len(data.routing.models) // 2)


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
