"""UniRoute from pairwise preferences inside the dynamic-pool protocol: arena-style sparse battles per trial.

Each trial turns the labels it may see into Chatbot Arena-style battles, one per prompt between two LLMs
drawn at random among those with a label there (training prompts: two training LLMs; validation prompts: any
two LLMs): the better score wins, equal scores tie. EvalConfig.battles_per_prompt draws more disjoint pairs per
prompt (the battle-density study: how much of the gap to every label is the number of battles). The router
never sees a pointwise label. K-means clusters the training prompts as for `kmeans` (the same cached fits);
Psi comes from per-cluster Bradley-Terry strengths (routers.cluster.bradley_terry) fitted on every battle the trial may
see, and the test LLMs are scored on the test prompts with their pointwise labels, exactly as every other method.

Choosing K (deviation, documented): the paper picks K by the Area of routing the validation prompts, which
needs pointwise labels a pairwise log does not have. Here K, and with it the ridge that ties a cluster's
strength to the overall one (PRIORS), maximise the mean log-likelihood of the validation battles between
training LLMs under strengths fitted on the training battles: the same split of roles (training LLMs,
validation prompts), scored on what a pairwise log holds. The ridge is tuned because sparse battles (one per
prompt) leave each LLM tens of battles per cluster: with a fixed weak ridge the per-cluster winners are noise.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import pandas as pd

from uniroute.routers.cluster.bradley_terry import BattleCounts, battle_counts, fit_strengths, log_likelihood
from uniroute.routers.kinds import GridSearch, cluster_ladder
from uniroute.selection.candidates import MAX_RUNGS
from uniroute.selection.curves import Curve
from uniroute.selection.data import RoutingData
from uniroute.selection.grids import search_record, widening_search
from uniroute.selection.split import TrialSplit

log = logging.getLogger(__name__)

# Ridge weights tried when tuning (Fisher-information units: 1 is about four evenly matched battles); the last
# one all but ties every cluster to the overall strength.
PRIORS = (1.0, 4.0, 16.0, 64.0, 256.0)


@dataclass(frozen=True)
class Battles:
    """Battles as indices into RoutingData: prompt rows, the two models, and the outcome for model a."""

    prompt: np.ndarray  # (B,) int64
    a: np.ndarray  # (B,) int64
    b: np.ndarray  # (B,) int64
    y: np.ndarray  # (B,) float64: 1 a won, 0 b won, 0.5 tie

    def subset(self, keep: np.ndarray) -> Battles:
        """The battles where keep (B,) is true."""
        return Battles(self.prompt[keep], self.a[keep], self.b[keep], self.y[keep])


def sparse_battles(scores: np.ndarray, prompts: np.ndarray, models: np.ndarray, rng: np.random.Generator,
                   per_prompt: int = 1) -> Battles:
    """Up to `per_prompt` disjoint battles per prompt between `models` drawn at random among those scored there
    (a prompt yields as many as its scored models allow; none with fewer than two); the higher score wins,
    equal scores tie. scores is (N, M). One per prompt draws exactly what it always did for the same rng."""
    if per_prompt < 1:
        raise ValueError(f"battles per prompt must be >= 1, got {per_prompt}")
    sub = scores[np.ix_(prompts, models)]  # (n, P)
    priority = np.where(np.isnan(sub), np.inf, rng.random(sub.shape))
    order = np.argsort(priority, axis=1)  # scored models first, in a random order: pair j is columns 2j, 2j+1
    rows = np.arange(len(prompts))
    parts = []
    for j in range(min(per_prompt, sub.shape[1] // 2)):
        first, second = order[:, 2 * j], order[:, 2 * j + 1]
        enough = np.isfinite(priority[rows, second])
        first, second, kept = first[enough], second[enough], rows[enough]
        s_a, s_b = sub[kept, first], sub[kept, second]
        y = np.where(s_a > s_b, 1.0, np.where(s_a < s_b, 0.0, 0.5))
        parts.append((prompts[kept], models[first], models[second], y))
    if not parts:
        # Three empty index arrays, then the empty outcomes (mypy cannot count a starred generator).
        return Battles(*(np.zeros(0, dtype=np.int64) for _ in range(3)), np.zeros(0))  # type: ignore[call-arg]
    prompt, a, b, y = (np.concatenate(col) for col in zip(*parts, strict=True))
    return Battles(prompt.astype(np.int64), a.astype(np.int64), b.astype(np.int64), y.astype(np.float64))


def trial_battles(data: RoutingData, split: TrialSplit, per_prompt: int = 1) -> tuple[Battles, Battles]:
    """(training-prompt battles between training LLMs, validation-prompt battles between any LLMs) of a trial,
    up to `per_prompt` disjoint ones per prompt."""
    rng = np.random.default_rng([split.fit_seed, 20])
    every = np.arange(len(data.models))
    train = sparse_battles(data.scores, split.train, split.train_models, rng, per_prompt)
    val = sparse_battles(data.scores, np.sort(split.val), every, rng, per_prompt)
    return train, val


def _counts(battles: Battles, cluster_of_prompt: np.ndarray, k: int, models: np.ndarray, names: tuple[str, ...]):
    """BattleCounts of the battles between `models` (indices into RoutingData; names: every model's name),
    each battle in its prompt's cluster (cluster_of_prompt is (N,))."""
    position = np.full(len(names), -1)
    position[models] = np.arange(len(models))
    keep = (position[battles.a] >= 0) & (position[battles.b] >= 0)
    chosen = battles.subset(keep)
    return battle_counts(position[chosen.a], position[chosen.b], chosen.y, cluster_of_prompt[chosen.prompt], k,
                         [names[i] for i in models])


class PairwiseTrial:
    """One trial's battles and the pairwise router's tuning and test curve (shares the trial's K-means fits)."""

    def __init__(self, state) -> None:
        self.state = state
        self.prior = PRIORS[0]  # set by tune()
        self.train_battles, self.val_battles = trial_battles(state.data, state.split,
                                                             state.config.battles_per_prompt)
        self.names = tuple(state.data.models)

    def _cluster_of_prompt(self, k: int) -> np.ndarray:
        """(N,) cluster of every prompt of the training and validation sets under the K-means fit (else -1)."""
        cents = self.state.centroids(k)
        split = self.state.split
        out = np.full(self.state.data.n_prompts, -1, dtype=np.int64)
        out[split.train] = cents.assign(self.state.X_train)
        out[split.val] = cents.assign(self.state.X_val)
        return out

    def tune(self, n_val: int) -> GridSearch:
        """K (and the ridge) maximising the validation battles' log-likelihood among training LLMs, K climbing
        the cluster ladder until that likelihood turns down (grids.widening_search); every K's best value over
        the ridges."""
        split = self.state.split
        train_models = split.train_models
        val_prompts = np.zeros(self.state.data.n_prompts, dtype=bool)
        val_prompts[split.val[:n_val]] = True
        held_out = self.val_battles.subset(val_prompts[self.val_battles.prompt])
        priors: dict[int, float] = {}

        def likelihood(k: int) -> float:
            clusters = self._cluster_of_prompt(k)
            train = _counts(self.train_battles, clusters, k, train_models, self.names)
            score, priors[k] = best_prior(train, _counts(held_out, clusters, k, train_models, self.names))
            return score

        search = widening_search(likelihood, cluster_ladder(n_val, len(split.train)), max_rungs=MAX_RUNGS)
        self.prior = priors[search.chosen]
        return search

    def curve(self, k: int, pool) -> Curve:
        """Test curve of routing the test LLMs with Psi = 1 - per-cluster Bradley-Terry quality."""
        every = np.arange(len(self.names))
        clusters = self._cluster_of_prompt(k)
        seen = Battles(*(np.concatenate([getattr(self.train_battles, f), getattr(self.val_battles, f)])
                         for f in ("prompt", "a", "b", "y")))
        fit = fit_strengths(_counts(seen, clusters, k, every, self.names), prior=self.prior)
        psi = 1.0 - fit.quality()[self.state.split.test_models]  # (M_te, K)
        gamma = self.state.test_onehot(k) @ psi.T
        return pool.curve(gamma, self.state.config.n_lambdas)


def best_prior(train: BattleCounts, held_out: BattleCounts) -> tuple[float, float]:
    """(best held-out log-likelihood per battle, its ridge) over PRIORS, strengths fitted on `train`."""
    scores = {prior: log_likelihood(fit_strengths(train, prior=prior).theta, held_out) for prior in PRIORS}
    prior = max(scores, key=lambda p: (scores[p], p))  # ties: the stronger ridge
    return scores[prior], prior


def pairwise_method(state, n_val: int, pool) -> tuple[dict[str, object], Curve]:
    """The `pairwise` method of a trial: (its tuning record, with the validation battles' log-likelihood per
    searched K as "areas" and the chosen ridge as "prior"; test curve)."""
    trial = PairwiseTrial(state)
    search = trial.tune(n_val)
    return search_record(search, prior=trial.prior), trial.curve(search.chosen, pool)


def arena_battles_frame(frame: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """Arena-style battles from a long pointwise frame: per prompt, two random models with a score there; the
    better score wins; equal scores tie ("tie (bothbad)" when both are 0). Columns of the pairwise format."""
    frame = frame.assign(prompt_id=frame["prompt_id"].astype(str), model=frame["model"].astype(str))
    prompt_ids = np.sort(frame["prompt_id"].unique())
    models = np.sort(frame["model"].unique())
    scores = np.full((len(prompt_ids), len(models)), np.nan)
    scores[np.searchsorted(prompt_ids, frame["prompt_id"]), np.searchsorted(models, frame["model"])] = frame["score"]
    battles = sparse_battles(scores, np.arange(len(prompt_ids)), np.arange(len(models)),
                             np.random.default_rng([seed, 21]))
    both = scores[battles.prompt, battles.a]
    winner = np.where(battles.y == 1.0, "model_a", np.where(battles.y == 0.0, "model_b",
                                                              np.where(both == 0.0, "tie (bothbad)", "tie")))
    firsts = frame.drop_duplicates("prompt_id").set_index("prompt_id")
    ids = prompt_ids[battles.prompt]
    out = pd.DataFrame({"prompt_id": ids, "prompt": firsts.loc[ids, "prompt"].to_numpy(),
                        "model_a": models[battles.a], "model_b": models[battles.b], "winner": winner})
    if "benchmark" in firsts.columns:
        out["benchmark"] = firsts.loc[ids, "benchmark"].to_numpy()
    return out
