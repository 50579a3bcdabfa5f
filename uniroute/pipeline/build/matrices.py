"""What a build reads from the store: the active, costed models' results as matrices and each prompt's split."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from uniroute import embed, store
from uniroute.embed.cache import scatter_vectors
from uniroute.embed.fill import Embedded, embed_store_prompts
from uniroute.errors import UnirouteError
from uniroute.pipeline.build.cells import Keep, RowCells
from uniroute.selection.data import EvalData, RoutingData
from uniroute.selection.split import TrialSplit
from uniroute.store.embeddings import expose_view, root_of

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

    @property
    def labelled(self) -> np.ndarray:
        """(N, M) bool: which prompt has a result of which model."""
        return ~np.isnan(self.eval_data.routing.scores)


@dataclass(frozen=True, eq=False)
class StoreIndex:
    """What a build holds of every prompt: its id, text hash, split and which models answered it, no numbers.

    The scores, costs and vectors are read for the rows the build works on only (result_rows, vector_rows): at
    1M prompts x 100 LLMs the whole score and cost matrices were 1.6 GB of the driver and the vectors 1 GB.
    """

    models: tuple[str, ...]
    excluded_models: tuple[str, ...]
    prompt_ids: tuple[str, ...]  # (N,) in prompt_id order: the rows of build_results' i
    text_hashes: pa.Array  # (N,) the embedding dataset's keys
    split: np.ndarray  # (N,) 'train' | 'val' | 'test'
    labelled: np.ndarray  # (N, M) bool: a result of the model (column, models' order) on the prompt (row)
    cells: RowCells | None = None  # the numbers of the rows load_store_index was told to keep, from the same pass


def _build_models(con: store.Connection, n_prompts: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The build's active, costed models and the ones left out for want of a cost; BuildError when too few."""
    models = tuple(store.query(con, "build_models")["model"])
    excluded = tuple(store.query(con, "build_excluded_models")["model"])
    if excluded:
        log.info("models without any cost are left out of the build: %s", list(excluded))  # the caller says so
    if len(models) < 2 and excluded:
        # The prompts are there; the costs are not. Saying "0 prompts" sent users looking for missing logs.
        named = ", ".join(excluded[:8]) + (f" and {len(excluded) - 8} more" if len(excluded) > 8 else "")
        raise BuildError(f"{len(models)} active model(s) have a cost and a build needs 2: {len(excluded)} have "
                         f"results but no cost ({named}); give each a cost per query with `uniroute models set-cost "
                         "MODEL COST` or `uniroute models set-cost --file costs.json`")
    if len(models) < 2 or n_prompts == 0:
        raise BuildError(f"the store holds {len(models)} active models with costs and {n_prompts} prompts; "
                         "a build needs at least 2 models with results (ingest logs, `uniroute models set-cost`)")
    return models, excluded


def load_store_index(con: store.Connection, keep: Callable[[np.ndarray], Keep] | None = None) -> StoreIndex:
    """Every build prompt's id, hash and split (assigned first) and the (N, M) answered mask, streamed from the
    results as load_store_data's matrices are (1 byte a cell, not 16).

    keep: told the split column (known before any result is read), the rows whose numbers the same pass keeps
    (build_cells.Keep; the index's `cells`), so the build reads the results once."""
    store.execute(con, "assign_splits")
    prompts = store.query_arrow(con, "build_prompt_index")
    models, excluded = _build_models(con, prompts.num_rows)
    split = prompts.column("split").to_numpy(zero_copy_only=False).astype(object)
    cells = None if keep is None else RowCells(keep(split), prompts.num_rows, len(models))
    labelled = np.zeros((prompts.num_rows, len(models)), dtype=bool)
    try:
        for batch in store.query_batches(con, "build_results", RESULT_BATCH_ROWS):
            labelled[batch.column("i").to_numpy(), batch.column("j").to_numpy()] = True
            if cells is not None:
                cells.add(batch)
    except BaseException:
        if cells is not None:
            cells.close()
        raise
    return StoreIndex(models=models, excluded_models=excluded,
                      prompt_ids=tuple(prompts.column("prompt_id").to_pylist()),
                      text_hashes=prompts.column("text_hash").combine_chunks(), split=split, labelled=labelled,
                      cells=cells)


def result_rows(con: store.Connection, rows: np.ndarray, n_models: int,
                costs_for: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(R, M) float64 scores of the build's rows `rows` (distinct store rows, build_results' i) and the costs of the
    first costs_for of them (default all), NaN where no result: the cells load_store_data's matrices hold there."""
    where = np.full(int(rows.max()) + 1 if len(rows) else 0, -1, dtype=np.int64)
    where[rows] = np.arange(len(rows))
    scores = np.full((len(rows), n_models), np.nan)
    costs = np.full((len(rows) if costs_for is None else costs_for, n_models), np.nan)
    for batch in store.query_batches(con, "build_results", RESULT_BATCH_ROWS):
        i = batch.column("i").to_numpy()
        inside = i < len(where)
        at = np.full(len(i), -1, dtype=np.int64)
        at[inside] = where[i[inside]]
        keep = at >= 0
        j = batch.column("j").to_numpy()[keep]
        scores[at[keep], j] = batch.column("score").to_numpy()[keep]
        costed = at[keep] < len(costs)
        costs[at[keep][costed], j[costed]] = batch.column("cost").to_numpy()[keep][costed]
    return scores, costs


def vector_rows(con: store.Connection, index: StoreIndex, rows: np.ndarray, embedder_id: str, dim: int) -> np.ndarray:
    """(R, dim) float32 cached vectors of the build's rows `rows`, read from the embedding dataset by text hash."""
    return hash_vectors(con, index.text_hashes.take(pa.array(rows, pa.int64())), embedder_id, dim)


def hash_vectors(con: store.Connection, hashes: pa.Array, embedder_id: str, dim: int) -> np.ndarray:
    """(R, dim) float32 cached vectors of these text hashes (one per build prompt), in their order."""
    wanted = pa.table({"pos": pa.array(np.arange(len(hashes), dtype=np.int64)), "text_hash": hashes})
    expose_view(con)  # the dataset as it is now: the files the build's embedding wrote included
    with store.registered(con, "wanted_hashes", wanted):
        found = store.query_arrow(con, "embedding_of_hashes", embedder_id=embedder_id)
    if found.num_rows != len(hashes):
        raise store.StoreError(f"embed {embedder_id}: {len(hashes) - found.num_rows} build prompts have no vector in "
                               f"the embedding dataset at {root_of(con)} (files lost while the build ran?)")
    out = np.empty((len(hashes), dim), dtype=np.float32)
    scatter_vectors(out, found.column("pos"), found.column("vector"), embedder_id)
    return out


def load_store_data(con: store.Connection) -> StoreData:
    """Active, costed models' results as (N, M) matrices; prompts get their stored split first.

    DuckDB computes the matrix coordinates, so the load stays a few columns of numbers per result even
    at 100M results (no prompt text repeated per row).
    """
    store.execute(con, "assign_splits")
    prompts = store.query(con, "build_prompts")
    models, excluded = _build_models(con, len(prompts))
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


def store_split(data: StoreData | StoreIndex, seed: int) -> TrialSplit:
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
    labelled = data.labelled
    with_train_labels = np.nonzero(labelled[index["train"]].any(axis=0))[0]
    train_models = complete_models(labelled[index["val"]], with_train_labels)
    with_val_labels = np.nonzero(labelled[index["val"]].any(axis=0))[0]  # c(m) comes from validation prompts
    test_models = complete_models(labelled[index["test"]], with_val_labels)
    complete = labelled[np.ix_(index["test"], test_models)].all(axis=1)
    test = index["test"][complete] if len(test_models) else index["test"][:0]
    return TrialSplit(train_models=train_models, test_models=test_models, train=index["train"], val=index["val"],
                      test=test, fit_seed=seed)


def embedder_fit_texts(con: store.Connection, embedder_name: str) -> list[str] | None:
    """The texts a build fits its embedder on; None for an embedder that is not fitted.

    An embedder fitted to a teacher's vectors (static-tuned) reads no label, so it is fitted on every prompt text the
    store has seen, traffic recorded with its text included: on prompts outside its fit it agrees less with its
    teacher, most of all on another dataset's (docs/decisions/0009-static-tuned-fits-every-seen-prompt.md).
    TF-IDF keeps the build's training prompts.
    """
    kind = embed.embedder_kind(embedder_name)
    if not kind.fitted:
        return None
    statement = "seen_prompt_texts" if kind.teacher else "build_train_texts"
    return store.query_arrow(con, statement).column("text").to_pylist()


def embed_prompts(
    con: store.Connection, embedder_name: str, seed: int, cache_dir: Path | None = None,
    on_stage: Callable[..., None] | None = None, ahead: Embedded | None = None, text_hashes: pa.Array | None = None,
) -> Any:
    """The embedder (TF-IDF fitted on the training prompts' texts, static-tuned on every text the store has seen),
    with every build prompt it lacks embedded into the dataset (embed_store_prompts: texts streamed in batches,
    vectors written, none kept here).

    ahead: what the caller's fill before this build made sure of (operations.build embeds on the Dask workers first);
    when it was this embedder and its digest is that of the build's prompts (text_hashes, one per prompt), every
    one of them has a vector and the look-up is not repeated. on_stage hears the two stages: preparing the embedder
    (the first build of the static or ONNX model from the local MiniLM takes about half a minute and prints nothing
    of its own), then embedding (its own bar).
    """
    if on_stage is not None:
        on_stage(f"preparing the {embedder_name} embedder")
    fit_texts = embedder_fit_texts(con, embedder_name)
    # static-tuned's teacher vectors of its fit texts come through the cache (and stay there for the next build).
    embedder = embed.make_embedder(embedder_name, fit_texts=fit_texts, seed=seed, cache_dir=cache_dir,
                                   teacher_vectors=lambda teacher, texts: embed.embed_cached(con, texts, teacher))
    del fit_texts
    if embedded_ahead(con, ahead, embedder.embedder_id, text_hashes):
        log.info("embed %s: the %d build prompts were embedded just before the build", embedder.embedder_id,
                 ahead.prompts)  # type: ignore[union-attr]  # embedded_ahead is false without it
        return embedder
    if on_stage is not None:
        on_stage(f"embedding the build's prompts with {embedder_name}", own_bar=True)
    embed_store_prompts(con, embedder)
    return embedder


def embedded_ahead(con: store.Connection, ahead: Embedded | None, embedder_id: str,
                   text_hashes: pa.Array | None) -> bool:
    """Whether the fill `ahead` embedded exactly these prompts' texts with this embedder (the same digest)."""
    if ahead is None or text_hashes is None or ahead.embedder_id != embedder_id:
        return False
    wanted = pa.table({"pos": pa.array(np.arange(len(text_hashes), dtype=np.int64)), "text_hash": text_hashes})
    with store.registered(con, "wanted_hashes", wanted):
        digest = tuple(int(v) for v in store.query_arrow(con, "hashes_digest").to_pylist()[0].values())
    return digest == ahead.digest
