"""The nightly build as an operation: inputs checked before the store is opened, one session, then reconcile."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from uniroute.embed import embed_cached, make_embedder
from uniroute.operations.context import Context
from uniroute.operations.inputs import BuildInputs, build_inputs
from uniroute.operations.reconcile import reconciled
from uniroute.pipeline.build import BuildResult, run_build
from uniroute.pipeline.build_data import prompt_texts


def build(ctx: Context, embedder: str, seed: int = 0, kinds: Sequence[str] = ()) -> BuildResult:
    """Tune every router kind in `kinds` (none named: all), serve the one chosen on validation prompts, version it;
    MLflow and `published/current` follow. EmbedderError or KindError for a bad name, before the store opens."""
    inputs = build_inputs(embedder, seed, kinds)
    with ctx.session("build", inputs=inputs.line()) as s:
        result = run_build(s.con, inputs.embedder.name, inputs.seed, cache_dir=ctx.cache_dir, kinds=inputs.kinds)
        s.detail = result.line()
    reconciled(ctx)
    return result


def embeds_ahead(inputs: BuildInputs) -> bool:
    """Whether the build's prompts can be embedded before it runs (TF-IDF is fitted inside the build)."""
    return not inputs.embedder.fitted


def embed_new_prompts(ctx: Context, embedder: str, client: Any = None) -> int:
    """Embed the stored prompts the cache lacks (on a Dask client's workers when given); the prompts looked up.

    A cache fill: each chunk commits on its own, so a run killed half-way keeps what it embedded.
    """
    with ctx.session("embed", inputs=embedder, atomic=False) as s:
        model = make_embedder(embedder, progress=False, cache_dir=ctx.cache_dir)
        return len(embed_cached(s.con, prompt_texts(s.con), model, client=client))
