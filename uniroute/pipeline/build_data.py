"""What a build reads from the store: the active, costed models' results as matrices and each prompt's split."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.compute as pc

from uniroute import store
from uniroute.evaluation import EvalData, RoutingData, TrialSplit

log = logging.getLogger(__name__)

class BuildError(RuntimeError):
    """The store does not hold what a build needs; the message says what is missing."""


@dataclass(frozen=True, eq=False)
class StoreData:
    """The store's prompts and results as matrices, with each prompt's split."""

    eval_data: EvalData
    text_hashes: tuple[str, ...]  # (N,)
    split: np.ndarray  # (N,) 'train' | 'val' | 'test'


def load_store_data(db_path: Path) -> StoreData:
    """Active, costed models' results as (N, M) matrices; prompts get their stored split first.

    DuckDB computes the matrix coordinates, so the load stays a few columns of numbers per result even
    at 100M results (no prompt text repeated per row).
    """
    with store.opened(db_path) as con:
        with store.transaction(con):
            store.execute(con, "assign_splits")
        models = tuple(store.query(con, "build_models")["model"])
        excluded = tuple(store.query(con, "build_excluded_models")["model"])
        prompts = store.query(con, "build_prompts")
        cells = store.query_arrow(con, "build_results")
    if excluded:
        log.warning("models without any cost are left out of the build: %s", list(excluded))
    if len(models) < 2 or len(prompts) == 0:
        raise BuildError(f"{db_path} holds {len(models)} active models with costs and {len(prompts)} prompts; "
                         "a build needs at least 2 models with results (ingest logs, `uniroute models set-cost`)")
    i = cells.column("i").to_numpy()
    j = cells.column("j").to_numpy()
    scores = np.full((len(prompts), len(models)), np.nan)
    costs = np.full_like(scores, np.nan)
    scores[i, j] = cells.column("score").to_numpy()
    costs[i, j] = cells.column("cost").to_numpy()
    data = EvalData(
        prompt_ids=tuple(prompts["prompt_id"]),
        prompts=tuple(prompts["text"]),
        routing=RoutingData(models=models, scores=scores, costs=costs),
        excluded_models=excluded,
        filled_costs=int(pc.sum(cells.column("cost_filled")).as_py() or 0),
    )
    return StoreData(eval_data=data, text_hashes=tuple(prompts["text_hash"]), split=prompts["split"].to_numpy(object))


def prompt_texts(db_path: Path) -> list[str]:
    """Texts of every prompt a build will embed."""
    with store.opened(db_path) as con:
        return store.query(con, "build_prompts")["text"].tolist()


def store_split(data: StoreData, seed: int) -> TrialSplit:
    """The stored split as a TrialSplit in which the whole pool plays both training and test LLMs."""
    models = np.arange(len(data.eval_data.routing.models))
    index = {name: np.nonzero(data.split == name)[0] for name in ("train", "val", "test")}
    for name, rows in index.items():
        if len(rows) < (2 if name != "train" else 3):
            raise BuildError(f"only {len(rows)} {name} prompts in the store; a build needs more")
    scores = data.eval_data.routing.scores
    test = index["test"][~np.isnan(scores[np.ix_(index["test"], models)]).any(axis=1)]
    if len(test) == 0:
        raise BuildError("no test prompt has a result from every active model: cannot evaluate the build")
    return TrialSplit(
        train_models=models, test_models=models, train=index["train"], val=index["val"], test=test, fit_seed=seed
    )


def embed_prompts(
    db_path: Path, texts: Sequence[str], embedder_name: str, seed: int, fit_texts: Sequence[str] | None
) -> tuple[np.ndarray, Any]:
    """(N, d) embeddings from the store's cache (only uncached texts are embedded), and the embedder."""
    from uniroute import embed

    embedder = embed.make_embedder(embedder_name, fit_texts=fit_texts, seed=seed)
    return embed.embed_cached(db_path, list(texts), embedder), embedder
