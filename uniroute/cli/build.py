"""`uniroute build`: the nightly build on what is in the store (the operations layer's `build`)."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from uniroute import operations
from uniroute.cli.app import JsonFlag, app, context, one_line_errors, print_frame, say, settings_from_env


@app.command("build")
def build_command(
    embedder: Annotated[str | None, typer.Option(
        help="minilm, minilm-onnx, static or tfidf (default: UNIROUTE_BUILD_EMBEDDER)."
    )] = None,
    seed: Annotated[int | None, typer.Option(help="Seed for K-means and the LearnedMap.")] = None,
    kinds: Annotated[str | None, typer.Option(
        help="Comma-separated router kinds to fit and choose among (default: UNIROUTE_BUILD_KINDS, else all of "
             "kmeans,kmeans_shrunk,learnedmap,knn); one kind serves that kind without a choice."
    )] = None,
    as_json: JsonFlag = False,
):
    """The nightly job on what is in the store: tune every router kind, serve the one chosen on validation
    prompts (its table of candidates is printed), evaluate on test prompts, version, log to MLflow.

    With UNIROUTE_DASK_ADDRESS set, new prompts are embedded on that Dask scheduler's workers first (the build's
    line says so), as the nightly flow does."""
    from uniroute.settings import comma_separated

    settings = settings_from_env()
    with one_line_errors():  # a bad name fails before the build opens the store
        result = operations.build(
            context(settings), embedder or settings.build_embedder_name, settings.seed if seed is None else seed,
            comma_separated(kinds) if kinds is not None else settings.build_kinds,
            dask_address=settings.dask_address, progress=not as_json,
        )
    if result.excluded_models:  # a note for the user, not a log warning (stderr: --json stays parseable)
        say(f"left out (no cost on any result; `uniroute models set-cost MODEL COST`): "
            f"{', '.join(result.excluded_models)}")
    if as_json:
        typer.echo(json.dumps(result.as_dict(), default=str))
        return
    typer.echo(result.line())
    typer.echo(result.selection)
    print_frame(result.candidates_table().drop(columns=["build_router_id"], errors="ignore"), False)
