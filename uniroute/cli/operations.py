"""Commands for operations: build, onboard, retire, publish, route."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from uniroute.cli.app import JsonFlag, app, fail, print_frame, settings_from_env


@app.command("build")
def build_command(
    embedder: Annotated[str | None, typer.Option(
        help="minilm, minilm-onnx, static or tfidf (default: UNIROUTE_EMBEDDER)."
    )] = None,
    seed: Annotated[int | None, typer.Option(help="Seed for K-means and the LearnedMap.")] = None,
    as_json: JsonFlag = False,
):
    """The nightly job on what is in the store: choose K, fit, compute Psi, evaluate, log, version."""
    from uniroute.pipeline.build import BuildError, run_build

    settings = settings_from_env()
    try:
        result = run_build(settings.db_path, embedder or settings.embedder, settings.seed if seed is None else seed,
                           settings.mlflow_uri, settings.mlflow_artifacts)
    except BuildError as exc:
        fail(str(exc))
    typer.echo(json.dumps(result.as_dict(), default=str) if as_json else result.line())


@app.command()
def onboard(
    results: Annotated[list[Path], typer.Option("--results", help="Validation results of the new model(s), any "
                                                "ingest format; prompts without a split count as validation.")],
    as_json: JsonFlag = False,
):
    """Add or refresh models from their validation results, on the champion's frozen clusters."""
    from uniroute.ingest import IngestError, ingest_file
    from uniroute.pipeline.onboard import OnboardError, onboard_models

    settings = settings_from_env()
    models: list[str] = []
    try:
        for path in results:
            summary = ingest_file(settings.db_path, path, split="val", progress=not as_json)
            models += [m for m in summary.landed_models if m not in models]
        if not models:
            fail(f"no new validation results in {', '.join(map(str, results))}: nothing to onboard")
        result = onboard_models(settings.db_path, models, settings.mlflow_uri, settings.mlflow_artifacts)
    except (IngestError, OnboardError, LookupError, FileNotFoundError) as exc:
        fail(str(exc))
    typer.echo(json.dumps(result.as_dict()) if as_json else result.line())


@app.command()
def retire(model: Annotated[str, typer.Argument(help="Model to take out of the pool.")]):
    """Remove a model from the pool (routing and publishing skip it; its results stay)."""
    from uniroute.pipeline.onboard import OnboardError, retire_model

    try:
        retire_model(settings_from_env().db_path, model)
    except OnboardError as exc:
        fail(str(exc))
    typer.echo(f"retired {model}")


@app.command("publish")
def publish_command(
    force: Annotated[bool, typer.Option(help="Publish even if nothing changed.")] = False,
    as_json: JsonFlag = False,
):
    """Write the champion's routing tables for the active pool (atomic, versioned)."""
    from uniroute.pipeline.publish import PublishError, publish_champion

    settings = settings_from_env()
    try:
        result = publish_champion(settings.db_path, settings.published_dir, settings.mlflow_uri,
                                  settings.mlflow_artifacts, force=force)
    except (PublishError, LookupError) as exc:
        fail(str(exc))
    if as_json:
        typer.echo(json.dumps(result.as_dict()))
    else:
        typer.echo(f"published {result.version} -> {result.path}" if result.published else result.reason)


@app.command()
def route(
    texts: Annotated[list[str], typer.Argument(help="Prompts to route.")],
    lam: Annotated[float | None, typer.Option("--lambda", help="Cost weight: argmin loss + lambda * cost.")] = None,
    budget: Annotated[
        float | None, typer.Option(help="Target mean cost as a fraction of the priciest model's.")
    ] = None,
    pool: Annotated[
        str | None, typer.Option(help="Comma-separated models to choose among (default: the active pool).")
    ] = None,
    log_decisions: Annotated[
        bool, typer.Option("--log", help="Append the decisions to the routing_log table.")
    ] = False,
    as_json: JsonFlag = False,
):
    """Route prompts with the champion router."""
    from uniroute.pipeline.serving import RoutingError, route_texts

    if lam is not None and budget is not None:
        fail("give --lambda or --budget, not both")
    settings = settings_from_env()
    try:
        decisions = route_texts(settings.db_path, texts, lam=lam, budget=budget,
                                pool=[p.strip() for p in pool.split(",")] if pool else None, log=log_decisions)
    except (RoutingError, LookupError, ValueError) as exc:
        fail(str(exc))
    print_frame(decisions.drop(columns=["text_hash"]), as_json)
