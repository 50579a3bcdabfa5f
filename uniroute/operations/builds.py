"""The nightly build as an operation: inputs checked before the store is opened, one session, then reconcile."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from distributed import Client

from uniroute import store
from uniroute.embed import make_embedder
from uniroute.embed.fill import Embedded, embed_store_prompts
from uniroute.operations.context import Context
from uniroute.operations.inputs import BuildInputs, build_inputs
from uniroute.operations.upkeep import reconciled
from uniroute.pipeline.build.clusters import DatasetClusters, cluster_dataset
from uniroute.pipeline.build.nightly import BuildResult, run_build
from uniroute.progress import ticking

log = logging.getLogger(__name__)


def build(ctx: Context, embedder: str, seed: int = 0, kinds: Sequence[str] = (),
          dask_address: str | None = None, progress: bool = False, embedded: Embedded | None = None) -> BuildResult:
    """Tune every router kind in `kinds` (none named: all), serve the one chosen on validation prompts, version it;
    MLflow and `published/current` follow. EmbedderError or KindError for a bad name, before the store opens.

    dask_address (UNIROUTE_DASK_ADDRESS): the new prompts are embedded on that scheduler's workers first, as the
    nightly flow does, and the build's notes say so, and a K-means refit over every training prompt runs there;
    None: in this process (the flow embeds on its own cluster first). embedded: the caller's own fill just before
    (embed_new_prompts), not repeated here; the build checks that it covered exactly its prompts.
    """
    inputs = build_inputs(embedder, seed, kinds)
    with contextlib.ExitStack() as stack:
        # One client for the build: the new prompts are embedded on its workers first, and a K-means refit on every
        # training prompt (a build larger than its tuning sample) runs there too, over the embedding dataset.
        client = stack.enter_context(Client(dask_address, timeout=60)) if dask_address else None
        on_dask = None
        if client is not None and embeds_ahead(inputs) and embedded is None:
            embedded = embed_new_prompts(ctx, inputs.embedder.name, client=client, progress=progress)
            on_dask = f"prompts embedded on the Dask scheduler at {dask_address} ({embedded.prompts:,} looked up)"
        # One progress line to the end: committing the build and following it in MLflow and `published/` take
        # half a minute after the last stage of run_build, a silence users took for a hang.
        stage = stack.enter_context(ticking("build", log, enabled=progress))
        with ctx.session("build", inputs=inputs.line()) as s:
            result = run_build(s.con, inputs.embedder.name, inputs.seed, cache_dir=ctx.cache_dir, kinds=inputs.kinds,
                               min_answers=ctx.min_val_answers, client=client, shadow=ctx.shadow, stage=stage,
                               embedded=embedded)
            if on_dask:
                result = replace(result, notes=(*result.notes, on_dask))
            s.detail = result.line()
            stage("saving the build in the store")
        stage("logging the router to MLflow and publishing its tables")
        reconciled(ctx)
    return result


def embeds_ahead(inputs: BuildInputs) -> bool:
    """Whether the build's prompts can be embedded before it runs (TF-IDF is fitted inside the build)."""
    return not inputs.embedder.fitted


def embed_new_prompts(ctx: Context, embedder: str, client: Any = None, progress: bool = False) -> Embedded:
    """Embed the stored prompts the cache lacks (on a Dask client's workers when given); what it made sure of (the
    prompts looked up: `.prompts`), which a build right after takes as `embedded`.

    A cache fill: each partition file is final once written, so a run killed half-way keeps what it embedded. The
    vectors go from the workers to the dataset; this process holds the texts and their hashes, never the matrix.
    progress: the stage (preparing the embedder: the static model's first build takes half a minute) and a bar or
    log lines (a flow forwards them to its run's log).
    """
    with ctx.session("embed", inputs=embedder, atomic=False) as s, ticking("embed", log, enabled=progress) as stage:
        stage(f"preparing the {embedder} embedder")
        model = make_embedder(embedder, progress=progress, cache_dir=ctx.cache_dir)
        stage(f"embedding the new prompts with {embedder}", own_bar=True)
        return embed_store_prompts(s.con, model, client=client)


def cluster_on_dask(ctx: Context, embedder: str, k: int, seed: int = 0, client: Any = None) -> DatasetClusters:
    """K-means (K = k) over the training prompts' cached vectors, fitted and assigned where the vectors are (on a
    Dask client's workers when given), every cached prompt's cluster written as a dataset beside them; the driver
    holds K x d centres. The store is only read: the session records the run."""
    with ctx.session("cluster", inputs=f"{embedder} k={k} seed={seed}", atomic=False) as s:
        model = make_embedder(embedder, progress=False, cache_dir=ctx.cache_dir)
        store.execute(s.con, "assign_splits")  # as a build does first: the training prompts are those of the split
        result = cluster_dataset(s.con, model.embedder_id, model.dim, k, seed, client=client)
        s.detail = result.line()
    return result
