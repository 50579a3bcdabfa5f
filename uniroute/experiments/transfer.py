"""Transfer across datasets (paper: train on Chatbot Arena, test on EmbedLLM): fit on one log, test on another.

The training log is pointwise (prompt x model scores) or pairwise (battles); the test log is pointwise. Every
LLM the two share is a training and a test LLM (no unseen LLMs, as in the paper's experiment). Per trial,
seeded by (seed, trial): the training log's prompts are split 90/10 into train and validation prompts (the
paper's split) and a random `test_fraction` of the test log's prompts (those labelled by every shared LLM) are
scored, so trials vary the prompt subsamples and the initialisations (K-means, LearnedMap). K and k are chosen
on the validation prompts: for pointwise logs by the Area of routing them, as in `uniroute evaluate`; for
pairwise logs by the log-likelihood of their battles. Psi (and K-NN's neighbours) come from the train prompts.
Metrics, curves and sign tests are those of `uniroute evaluate`, on the test prompts.

Costs: realised costs are the test log's. The cost c(m) the router sees is the mean cost of m on the
validation prompts when the training log has costs for every shared LLM, else its mean cost in the test log
(a price list: what a model costs per query, not a label). A test log without costs makes the run
quality-only (evaluation.quality); shared LLMs without any cost in a costed test log are left out.

Shapes: the combined matrices have the N1 training-log prompts first, then the N2 test-log prompts.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from uniroute.experiments.methods import KIND_METHODS
from uniroute.experiments.pairwise_protocol import Battles
from uniroute.routers.kinds import router_kind
from uniroute.selection.data import EvalData, RoutingData
from uniroute.selection.split import TrialSplit

log = logging.getLogger(__name__)

# The kinds with a transfer variant (RouterKind.transfers), and those fitted from battles (pairwise_variant: the
# LearnedMap trains on pointwise labels).
TRANSFER_METHODS = ("zero", *(m for m in KIND_METHODS if router_kind(m).transfers))
PAIRWISE_TRANSFER_METHODS = ("zero", *(m for m in KIND_METHODS if router_kind(m).pairwise_variant))


@dataclass(frozen=True)
class PairwiseLog:
    """A pairwise log as the evaluation reads it: prompts and battles between named models."""

    prompt_ids: tuple[str, ...]  # (N,)
    prompts: tuple[str, ...]  # (N,)
    models: tuple[str, ...]
    battles: Battles  # indices into prompts and models


@dataclass(frozen=True, eq=False)
class TransferData:
    """Both logs over the shared LLMs, stacked: training-log prompts first, then test-log prompts."""

    routing: RoutingData  # (N1 + N2, M); pairwise training rows are all NaN
    n_train_prompts: int  # N1
    battles: Battles | None  # pairwise training evidence (prompts < N1), None for a pointwise log
    prompts: tuple[str, ...]  # (N1 + N2,) texts to embed
    prompt_ids: tuple[str, ...]  # (N1 + N2,)
    excluded_models: tuple[str, ...]  # shared LLMs left out (no cost in a costed test log)
    costs_from: str  # what c(m) is: 'training log', 'test log' or 'unit (quality-only)'
    dropped_test_prompts: int  # test-log prompts not labelled by every shared LLM
    router_costs: np.ndarray | None = None  # (M,) fixed c(m) (price list or unit); None: from the val prompts

    @property
    def n_prompts(self) -> int:
        return self.routing.n_prompts

    @property
    def pairwise(self) -> bool:
        return self.battles is not None

    @property
    def train_evidence_kind(self) -> str:
        return "pairwise" if self.pairwise else "pointwise"

    @property
    def quality_only(self) -> bool:
        return self.costs_from.startswith("unit")


def pairwise_log_from_frame(frame: pd.DataFrame) -> PairwiseLog:
    """A pairwise log from checked battle rows (prompt_id, prompt, model_a, model_b, preference)."""
    prompt_ids, rows = np.unique(frame["prompt_id"].astype(str).to_numpy(), return_inverse=True)
    models = tuple(sorted(set(frame["model_a"]) | set(frame["model_b"])))
    index = {m: i for i, m in enumerate(models)}
    texts = frame.drop_duplicates("prompt_id").set_index("prompt_id")["prompt"].reindex(prompt_ids)
    battles = Battles(rows.astype(np.int64), frame["model_a"].map(index).to_numpy(np.int64),
                      frame["model_b"].map(index).to_numpy(np.int64), frame["preference"].to_numpy(np.float64))
    return PairwiseLog(tuple(prompt_ids.tolist()), tuple(texts.astype(str)), models, battles)


def transfer_data(train: EvalData | PairwiseLog, test: EvalData, train_costs: bool = True,
                  test_costs: bool = True) -> TransferData:
    """Stack a training log (pointwise or pairwise) and a pointwise test log over the LLMs they share.

    train_costs / test_costs: whether each pointwise log has costs (False: it was read with unit costs).
    """
    train_models = train.models if isinstance(train, PairwiseLog) else train.routing.models
    shared = sorted(set(train_models) & set(test.routing.models))
    if len(shared) < 2:
        raise ValueError(f"the two logs share {len(shared)} LLMs ({shared}); transfer needs at least 2 "
                         f"(training: {len(train_models)} LLMs, test: {len(test.routing.models)})")
    overlap = set(train.prompt_ids) & set(test.prompt_ids)
    if overlap:
        raise ValueError(f"the training and test logs share {len(overlap)} prompts (e.g. {sorted(overlap)[0]!r}): "
                         "choose disjoint data (e.g. --train-benchmarks and --test-benchmarks)")
    test_cols = [test.routing.models.index(m) for m in shared]
    complete = ~np.isnan(test.routing.scores[:, test_cols]).any(axis=1)
    if complete.sum() < 2:
        raise ValueError(f"only {int(complete.sum())} test prompts are labelled by every shared LLM")
    test_scores = test.routing.scores[np.ix_(complete, test_cols)]
    test_costs_m = test.routing.costs[np.ix_(complete, test_cols)] if test_costs else np.ones_like(test_scores)
    n1 = len(train.prompt_ids)
    m = len(shared)
    if isinstance(train, PairwiseLog):
        position = np.array([shared.index(name) if name in shared else -1 for name in train.models])
        keep = (position[train.battles.a] >= 0) & (position[train.battles.b] >= 0)
        b = train.battles.subset(keep)
        battles = Battles(b.prompt, position[b.a], position[b.b], b.y)
        train_scores = np.full((n1, m), np.nan)
        train_cost_matrix = train_scores.copy()
        train_costs = False
    else:
        cols = [train.routing.models.index(name) for name in shared]
        train_scores = train.routing.scores[:, cols]
        train_cost_matrix = train.routing.costs[:, cols]
        battles = None
    price = None
    if not test_costs:
        costs_from = "unit (quality-only: the test log has no costs)"
        price = np.ones(m)
    elif train_costs:
        costs_from = "training log (mean cost on the validation prompts)"
    else:
        costs_from = "test log (each model's mean cost per query there: a price list)"
        price = test_costs_m.mean(axis=0)
    if price is not None:  # training rows cost what the router is told a model costs
        train_cost_matrix = np.where(np.isnan(train_scores), np.nan, price[None, :])
    routing = RoutingData(tuple(shared), np.vstack([train_scores, test_scores]),
                          np.vstack([train_cost_matrix, test_costs_m]))
    test_texts = tuple(t for t, keep in zip(test.prompts, complete, strict=True) if keep)
    test_ids = tuple(p for p, keep in zip(test.prompt_ids, complete, strict=True) if keep)
    excluded = tuple(sorted(set(train_models) & set(test.excluded_models)))
    return TransferData(routing, n1, battles, tuple(train.prompts) + test_texts, tuple(train.prompt_ids) + test_ids,
                        excluded, costs_from, int((~complete).sum()), price)


@dataclass(frozen=True)
class TransferConfig:
    """What a transfer run evaluates; plain values so that it pickles to Dask workers."""

    seed: int = 0
    methods: tuple[str, ...] = TRANSFER_METHODS
    val_frac: float = 0.1  # of the training log's prompts (the paper: 90% train, 10% validation)
    test_fraction: float = 0.5  # of the test log's prompts scored per trial
    n_lambdas: int = 256
    learned_map_epochs: int = 5

    def __post_init__(self) -> None:
        unknown = sorted(set(self.methods) - set(TRANSFER_METHODS))
        if unknown or not self.methods:
            raise ValueError(f"transfer methods must be among {list(TRANSFER_METHODS)}, got {list(self.methods)}")
        if not (0 < self.val_frac < 1 and 0 < self.test_fraction <= 1):
            raise ValueError(f"bad fractions: val {self.val_frac}, test {self.test_fraction}")


def transfer_split(data: TransferData, config: TransferConfig, trial: int) -> TrialSplit:
    """The seeded prompt split of one trial; every shared LLM is both a training and a test LLM."""
    rng = np.random.default_rng([config.seed, trial])
    n1, n = data.n_train_prompts, data.routing.n_prompts
    perm = rng.permutation(n1)
    n_val = max(2, int(round(config.val_frac * n1)))
    n_test = max(2, int(round(config.test_fraction * (n - n1))))
    test = np.sort(rng.choice(np.arange(n1, n), size=min(n_test, n - n1), replace=False))
    every = np.arange(len(data.routing.models))
    return TrialSplit(every, every, np.sort(perm[n_val:]), perm[:n_val], test, int(rng.integers(0, 2**31 - 1)))


def transfer_report_fields(data: TransferData, config: TransferConfig) -> dict[str, Any]:
    """What a transfer report says about its protocol, beside the usual evaluation fields."""
    return {
        "transfer": True,
        "train_evidence": data.train_evidence_kind,
        "shared_models": list(data.routing.models),
        "n_train_log_prompts": data.n_train_prompts,
        "n_test_log_prompts": data.routing.n_prompts - data.n_train_prompts,
        "dropped_test_prompts": data.dropped_test_prompts,
        "costs_from": data.costs_from,
        "protocol": {
            "llms": "every LLM both logs share is a training and a test LLM (no unseen LLMs)",
            "prompt_split": f"training log {1 - config.val_frac:.0%} train / {config.val_frac:.0%} val per trial; "
                            f"{config.test_fraction:.0%} of the test log's prompts scored per trial",
            "tuning": "Area on the validation prompts" if not data.pairwise
            else "log-likelihood of the validation battles (mean per battle)",
            "psi": "from the train prompts of the training log",
        },
    }
