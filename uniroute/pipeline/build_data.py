"""What a build reads from the store: the active, costed models' results as matrices and each prompt's split."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.compute as pc

from uniroute import embed, store
from uniroute.errors import UnirouteError
from uniroute.selection.data import EvalData, RoutingData
from uniroute.selection.split import TrialSplit

log = logging.getLogger(__name__)

# Roles in a build: the models kept for tuning (or scoring) together label at least this share of the prompts.
MIN_COMPLETE_SHARE = 0.5
# Result cells per Arrow batch while a build fills its matrices (about 25 MB each).
RESULT_BATCH_ROWS = 1_000_000

class BuildError(UnirouteError, RuntimeError):
    """The store does not hold what a build needs; the message says what is missing."""


@dataclass(frozen=True, eq=False)
class StoreData:
    """The store's prompts and results as matrices, with each prompt's split."""

    eval_data: EvalData
    split: np.ndarray  # (N,) 'train' | 'val' | 'test'


def load_store_data(con: store.Connection) -> StoreData:
    """Active, costed models' results as (N, M) matrices; prompts get their stored split first.

    DuckDB computes the matrix coordinates, so the load stays a few columns of numbers per result even
    at 100M results (no prompt text repeated per row).
    """
    store.execute(con, "assign_splits")
    models = tuple(store.query(con, "build_models")["model"])
    excluded = tuple(store.query(con, "build_excluded_models")["model"])
    prompts = store.query(con, "build_prompts")
    if excluded:
        log.info("models without any cost are left out of the build: %s", list(excluded))  # the caller says so
    if len(models) < 2 and excluded:
        # The prompts are there; the costs are not. Saying "0 prompts" sent users looking for missing logs.
        named = ", ".join(excluded[:8]) + (f" and {len(excluded) - 8} more" if len(excluded) > 8 else "")
        raise BuildError(f"{len(models)} active model(s) have a cost and a build needs 2: {len(excluded)} have "
                         f"results but no cost ({named}); give each a cost per query with `uniroute models set-cost "
                         "MODEL COST` or `uniroute models set-cost --file costs.json`")
    if len(models) < 2 or len(prompts) == 0:
        raise BuildError(f"the store holds {len(models)} active models with costs and {len(prompts)} prompts; "
                         "a build needs at least 2 models with results (ingest logs, `uniroute models set-cost`)")
    scores, costs, filled = _result_matrices(con, len(prompts), len(models))
    data = EvalData(
        prompt_ids=tuple(prompts["prompt_id"]),
        prompts=tuple(prompts["text"]),
        routing=RoutingData(models=models, scores=scores, costs=costs),
        excluded_models=excluded,
        filled_costs=filled,
    )
    return StoreData(eval_data=data, split=prompts["split"].to_numpy(object))


def _result_matrices(con: store.Connection, n_prompts: int, n_models: int) -> tuple[np.ndarray, np.ndarray, int]:
    """(N, M) float64 scores and costs (NaN where no result) and how many costs were filled in.

    The cells are streamed in batches of RESULT_BATCH_ROWS: at 100M results one Arrow table of them would be
    2.5 GB on top of the two matrices (1.6 GB). float64 stays: float32 would change the small builds' numbers.
    """
    scores = np.full((n_prompts, n_models), np.nan)
    costs = np.full_like(scores, np.nan)
    filled = 0
    for batch in store.query_batches(con, "build_results", RESULT_BATCH_ROWS):
        i = batch.column("i").to_numpy()
        j = batch.column("j").to_numpy()
        scores[i, j] = batch.column("score").to_numpy()
        costs[i, j] = batch.column("cost").to_numpy()
        filled += int(pc.sum(batch.column("cost_filled")).as_py() or 0)
    return scores, costs, filled


def prompt_texts(con: store.Connection) -> list[str]:
    """Texts of every prompt a build will embed."""
    return store.query(con, "build_prompts")["text"].tolist()


def complete_models(labelled: np.ndarray, candidates: np.ndarray, min_share: float = MIN_COMPLETE_SHARE) -> np.ndarray:
    """The candidates (column indices of labelled (n, M)) kept so that at least min_share of the rows labelled by
    any candidate are labelled by every kept one: the least-labelled model is dropped until that holds.

    A model that answered few of these prompts (say, one onboarded from its validation results only) would
    otherwise leave no prompt with a label from every model, and nothing to score or tune on.
    """
    kept = [int(m) for m in candidates if labelled[:, m].any()]
    any_rows = labelled[:, kept].any(axis=1).sum() if kept else 0
    while len(kept) > 1 and labelled[:, kept].all(axis=1).sum() < min_share * any_rows:
        counts = labelled[:, kept].sum(axis=0)
        kept.pop(int(np.argmin(counts)))  # ties: the first (lowest index), so the rule is deterministic
    return np.array(sorted(kept), dtype=np.int64)


def store_split(data: StoreData, seed: int) -> TrialSplit:
    """The stored split as a TrialSplit: which models tune on validation prompts and which are scored on test.

    Training LLMs: models with training labels that, together, label most validation prompts (complete_models).
    Test LLMs: models that, together, label most test prompts; test prompts are those labelled by all of them.
    Every active, costed model with validation results still gets a Psi row and joins the router; these roles
    only decide what the build tunes and scores on (docs/architecture.md, "Splits and roles").
    """
    index = {name: np.nonzero(data.split == name)[0] for name in ("train", "val", "test")}
    for name, least in (("train", 3), ("val", 2)):
        if len(index[name]) < least:
            raise BuildError(f"only {len(index[name])} {name} prompts in the store; a build needs at least {least}")
    labelled = ~np.isnan(data.eval_data.routing.scores)
    with_train_labels = np.nonzero(labelled[index["train"]].any(axis=0))[0]
    train_models = complete_models(labelled[index["val"]], with_train_labels)
    with_val_labels = np.nonzero(labelled[index["val"]].any(axis=0))[0]  # c(m) comes from validation prompts
    test_models = complete_models(labelled[index["test"]], with_val_labels)
    complete = labelled[np.ix_(index["test"], test_models)].all(axis=1)
    test = index["test"][complete] if len(test_models) else index["test"][:0]
    return TrialSplit(train_models=train_models, test_models=test_models, train=index["train"], val=index["val"],
                      test=test, fit_seed=seed)


def embed_prompts(
    con: store.Connection, texts: Sequence[str], embedder_name: str, seed: int, fit_texts: Sequence[str] | None,
    cache_dir: Path | None = None, on_stage: Callable[..., None] | None = None,
) -> tuple[np.ndarray, Any]:
    """(N, d) embeddings from the store's cache (only uncached texts are embedded), and the embedder.

    on_stage hears the two stages: preparing the embedder (the first build of the static or ONNX model from the
    local MiniLM takes about half a minute and prints nothing of its own), then embedding (its own bar).
    """
    if on_stage is not None:
        on_stage(f"preparing the {embedder_name} embedder")
    embedder = embed.make_embedder(embedder_name, fit_texts=fit_texts, seed=seed, cache_dir=cache_dir)
    if on_stage is not None:
        on_stage(f"embedding {len(texts):,} prompts with {embedder_name}", own_bar=True)
    return embed.embed_cached(con, list(texts), embedder), embedder
