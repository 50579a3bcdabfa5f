"""Commands for data in: ingest logs, write synthetic logs, query the store, inspect and edit models."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from uniroute.cli.app import JsonFlag, app, fail, models_app, print_frame, settings_from_env


@app.command()
def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Benchmark log files (long CSV/JSONL/Parquet, "
                                                "RouterBench wide CSV, RouterDC JSON); detected by content.")],
    split: Annotated[str | None, typer.Option(help="Mark every prompt of these files as train, val or test.")] = None,
    as_json: JsonFlag = False,
):
    """Validate benchmark logs and load them into the store (one transaction per file)."""
    from uniroute.ingest import IngestError, ingest_file

    settings = settings_from_env()
    if split is not None and split not in ("train", "val", "test"):
        fail(f"--split must be train, val or test, not {split!r}")
    summaries = []
    for path in paths:
        try:
            summary = ingest_file(settings.db_path, path, split=split, progress=not as_json)
        except (IngestError, FileNotFoundError) as exc:
            fail(str(exc))
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
    topics: Annotated[int, typer.Option(help="Number of latent topics (at most 16).")] = 8,
    seed: Annotated[int, typer.Option(help="Random seed; the same seed gives the same bytes.")] = 0,
    fmt: Annotated[str, typer.Option("--format", help="Output format: parquet, csv or jsonl.")] = "parquet",
    split: Annotated[bool, typer.Option("--split/--no-split",
                                        help="Add a split column (60/10/30 train/val/test per prompt).")] = False,
    missing_rate: Annotated[float, typer.Option(help="Fraction of (prompt, model) results left out.")] = 0.0,
    as_json: JsonFlag = False,
):
    """Write synthetic benchmark logs (long format) with latent topics, per-model skills and skill-priced costs."""
    from uniroute.synth import write_synthetic_logs

    try:
        summary = write_synthetic_logs(out, n_prompts=prompts, n_models=models, n_topics=topics, seed=seed,
                                       format=fmt, with_split=split, missing_rate=missing_rate)
    except (ValueError, OSError) as exc:
        fail(str(exc))
    typer.echo(json.dumps(summary.as_dict()) if as_json else summary.line())


@app.command()
def sql(
    statement: Annotated[str, typer.Argument(help="A SELECT over the store's tables and views.")],
    fmt: Annotated[str | None, typer.Option("--format", help="Output: table (default), json, csv or markdown.")] = None,
    as_json: JsonFlag = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="Print CSV (same as --format csv).")] = False,
):
    """Run a read-only SQL query on the store; statements that would write are refused."""
    from uniroute.cli.formats import FORMATS, render
    from uniroute.store import StoreError, read_only_query

    flagged = [name for name, on in (("json", as_json), ("csv", as_csv)) if on]
    if fmt is not None and fmt not in FORMATS:
        fail(f"--format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    if len(set(flagged + ([fmt] if fmt else []))) > 1:
        fail(f"choose one output format, not {' and '.join(sorted(set(flagged + ([fmt] if fmt else []))))}")
    fmt = fmt or (flagged[0] if flagged else "table")
    settings = settings_from_env()
    try:
        frame = read_only_query(settings.db_path, statement)
    except StoreError as exc:
        fail(str(exc))
    typer.echo(render(frame, fmt), nl=fmt != "csv")


@models_app.command("list")
def models_list(as_json: JsonFlag = False):
    """List the models with their status, default cost and result counts."""
    from uniroute.store import StoreError, read_only_query

    try:
        frame = read_only_query(settings_from_env().db_path, "select * from models order by model")
    except StoreError as exc:
        fail(str(exc))
    print_frame(frame, as_json)


@models_app.command("set-cost")
def models_set_cost(
    model: Annotated[str, typer.Argument(help="Model name as it appears in the logs.")],
    cost: Annotated[float, typer.Argument(help="Cost per query (any unit, the same for every model).")],
):
    """Set a model's default cost, used where its result rows carry no cost."""
    from uniroute.ingest import IngestError, set_default_cost

    try:
        set_default_cost(settings_from_env().db_path, model, cost)
    except IngestError as exc:
        fail(str(exc))
    typer.echo(f"{model}: default cost {cost}")
