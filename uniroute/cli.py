"""The `uniroute` command line: a thin edge that builds Settings and calls the library."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Annotated

import typer

from uniroute.settings import Settings, apply_offline_environment

app = typer.Typer(
    help=(
        "Route each prompt to the right LLM in a pool that keeps changing (UniRoute). "
        "All state lives under $UNIROUTE_HOME (default ./.uniroute)."
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
models_app = typer.Typer(help="Inspect and edit the model registry.", no_args_is_help=True)
app.add_typer(models_app, name="models")

JsonFlag = Annotated[bool, typer.Option("--json", help="Print the result as JSON on stdout.")]


def _settings() -> Settings:
    settings = Settings()
    apply_offline_environment(settings)
    return settings


def _fail(message: str) -> None:
    """One line on stderr, non-zero exit."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code=1)


@app.callback()
def _main(verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log progress details.")] = False):
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )


def _print_frame(frame, as_json: bool, as_csv: bool = False) -> None:
    if as_json:
        typer.echo(frame.to_json(orient="records", date_format="iso"))
    elif as_csv:
        typer.echo(frame.to_csv(index=False), nl=False)
    else:
        import pandas as pd

        with pd.option_context("display.max_rows", 200, "display.max_columns", 50, "display.width", 200):
            typer.echo(frame.to_string(index=False) if len(frame) else "(no rows)")


@app.command()
def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Benchmark log files (long CSV/JSONL/Parquet, "
                                                "RouterBench wide CSV, RouterDC JSON); detected by content.")],
    split: Annotated[str | None, typer.Option(help="Mark every prompt of these files as train, val or test.")] = None,
    as_json: JsonFlag = False,
):
    """Validate benchmark logs and load them into the store (one transaction per file)."""
    from uniroute.ingest import IngestError, ingest_file

    settings = _settings()
    if split is not None and split not in ("train", "val", "test"):
        _fail(f"--split must be train, val or test, not {split!r}")
    summaries = []
    for path in paths:
        try:
            summary = ingest_file(settings.db_path, path, split=split, progress=not as_json)
        except (IngestError, FileNotFoundError) as exc:
            _fail(str(exc))
        summaries.append(summary)
        if not as_json:
            typer.echo(summary.line())
    if as_json:
        typer.echo(json.dumps([s.as_dict() for s in summaries]))


@app.command()
def synth(
    out: Annotated[Path, typer.Option(help="Folder to write the synthetic logs into.")],
    prompts: Annotated[int, typer.Option(help="Number of prompts.")] = 5000,
    models: Annotated[int, typer.Option(help="Number of LLMs.")] = 12,
    topics: Annotated[int, typer.Option(help="Number of latent topics.")] = 8,
    seed: Annotated[int, typer.Option(help="Random seed; the same seed gives the same bytes.")] = 0,
    as_json: JsonFlag = False,
):
    """Write synthetic benchmark logs (long format, Parquet) with latent topics and per-model skills."""
    from uniroute.synth import write_synthetic_logs

    summary = write_synthetic_logs(out, n_prompts=prompts, n_models=models, n_topics=topics, seed=seed)
    typer.echo(json.dumps(summary.as_dict()) if as_json else summary.line())


@app.command()
def sql(
    statement: Annotated[str, typer.Argument(help="A SELECT over the store's tables and views.")],
    as_json: JsonFlag = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="Print CSV instead of a table.")] = False,
):
    """Run a read-only SQL query on the store; statements that would write are refused."""
    from uniroute.store import StoreError, read_only_query

    settings = _settings()
    try:
        frame = read_only_query(settings.db_path, statement)
    except StoreError as exc:
        _fail(str(exc))
    _print_frame(frame, as_json, as_csv)


@models_app.command("list")
def models_list(as_json: JsonFlag = False):
    """List the models with their status, default cost and result counts."""
    from uniroute.store import StoreError, read_only_query

    try:
        frame = read_only_query(_settings().db_path, "select * from models order by model")
    except StoreError as exc:
        _fail(str(exc))
    _print_frame(frame, as_json)


@models_app.command("set-cost")
def models_set_cost(
    model: Annotated[str, typer.Argument(help="Model name as it appears in the logs.")],
    cost: Annotated[float, typer.Argument(help="Cost per query (any unit, the same for every model).")],
):
    """Set a model's default cost, used where its result rows carry no cost."""
    from uniroute.ingest import IngestError, set_default_cost

    try:
        set_default_cost(_settings().db_path, model, cost)
    except IngestError as exc:
        _fail(str(exc))
    typer.echo(f"{model}: default cost {cost}")
