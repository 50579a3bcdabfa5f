"""Commands for data in: ingest logs, write synthetic logs, query the store, inspect and edit models."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Annotated

import typer

from uniroute import operations
from uniroute.cli.app import (
    EXIT_INTERRUPTED,
    EXIT_REFUSED,
    JsonFlag,
    app,
    context,
    fail,
    models_app,
    one_line_errors,
    print_frame,
    say,
    settings_from_env,
)
from uniroute.cli.sql_output import DEFAULT_MAX_ROWS, ctrl_c_cancels, cut_off_notice, write_rows
from uniroute.errors import UnirouteError
from uniroute.formats import FORMATS
from uniroute.ingest import IngestError
from uniroute.ingest.cost_file import costs_from_file
from uniroute.ingest.load import regular_file
from uniroute.ingest.prices import checked_price, prices_from_file
from uniroute.pipeline.user_sql import run_user_sql
from uniroute.store import Sandbox, SqlInterrupted, SqlRefused, private_temp_dir, query_text, read_only_query
from uniroute.store.sql_stream import size_bytes
from uniroute.synth import write_synthetic_logs


@app.command()
def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Benchmark log files (long CSV/JSONL/Parquet, "
                                                "RouterBench wide CSV, RouterDC JSON, pairwise preferences in the "
                                                "Chatbot Arena convention), detected by content, or folders of "
                                                "them (every file in it, in name order).")],
    split: Annotated[str | None, typer.Option(help="Mark every prompt of these files as train, val or test.")] = None,
    as_json: JsonFlag = False,
):
    """Validate benchmark logs and load them into the store (one transaction per file)."""
    settings = settings_from_env()
    if split is not None and split not in ("train", "val", "test"):
        fail(f"--split must be train, val or test, not {split!r}")
    paths = files_to_ingest(paths)  # before the store is created: a missing path changes nothing
    ctx = context(settings)
    summaries = []
    for number, path in enumerate(paths):
        try:
            summary = operations.ingest(ctx, path, split=split, progress=not as_json)
        except IngestError as exc:
            if as_json:  # what did land is on stdout either way
                typer.echo(json.dumps([s.as_dict() for s in summaries]))
            rest = paths[number + 1:]
            fail(f"{exc}" + (f" (stopped there: {', '.join(map(str, rest))} not ingested)" if rest else ""))
        except UnirouteError as exc:
            fail(str(exc))
        summaries.append(summary)
        if not as_json:
            typer.echo(summary.line())
    if as_json:
        typer.echo(json.dumps([s.as_dict() for s in summaries]))
    _say_models_without_cost(settings, {m for s in summaries for m in s.models})


def _say_models_without_cost(settings, models: set[str]) -> None:
    """A note on stderr for the models of these files that have no cost anywhere: a build leaves them out."""
    if not models:
        return
    try:
        lacking = [m for m in read_only_query(settings.db_path, query_text("build_excluded_models")).model
                   if m in models]
    except UnirouteError:  # a writer holds the store now: the note waits for the next command
        return
    if lacking:
        shown = ", ".join(lacking[:8]) + (f" and {len(lacking) - 8} more" if len(lacking) > 8 else "")
        say(f"note: {len(lacking)} model(s) have no cost yet ({shown}); a build leaves them out until they have "
            "one: `uniroute models set-cost MODEL COST` or `uniroute models set-cost --file costs.json`")


def files_to_ingest(paths: list[Path]) -> list[Path]:
    """The files named, a folder standing for its files (name order; hidden files and unfinished NAME.part left
    out); a one-line error for a path that does not exist or a folder with no file."""
    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            inside = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith(".")
                            and not p.name.endswith(".part"))
            if not inside:
                fail(f"{path} is a folder with no file to ingest")
            out += inside
        else:
            with one_line_errors():
                regular_file(path)  # a missing path, a loop, a device: its own one line, before the store opens
            out.append(path)
    return out


@app.command()
def inbox(
    onboard: Annotated[bool, typer.Option("--onboard/--no-onboard", help="Onboard the models whose validation "
                                          "results landed (what the Prefect event triggers).")] = True,
    as_json: JsonFlag = False,
):
    """Process the inbox once: ingest complete files, move them to done/ or failed/, onboard landed models.

    For schedulers other than Prefect (cron): the inbox flow calls the same function. Writers put files in
    $UNIROUTE_HOME/inbox as NAME.part and rename them to NAME when complete.
    """
    settings = settings_from_env()
    with one_line_errors():
        run = operations.inbox(context(settings), onboard_landed=onboard)
    if as_json:
        typer.echo(json.dumps({"files": [o.as_dict() for o in run.outcomes],
                               "onboarded": None if run.onboarding is None else run.onboarding.as_dict()}))
        _fail_on_rejected(run.failed, len(run.outcomes), settings.inbox_dir)
        return
    for outcome in run.outcomes:
        detail = outcome.summary.line() if outcome.summary is not None else outcome.error
        typer.echo(f"{outcome.name}: {outcome.status} -> {outcome.moved_to} ({detail})")
    if not run.outcomes:
        typer.echo(f"nothing waiting in {settings.inbox_dir}")
    if run.onboarding is not None:
        typer.echo(run.onboarding.line())
    _fail_on_rejected(run.failed, len(run.outcomes), settings.inbox_dir)


def _fail_on_rejected(failed: list[str], processed: int, inbox_dir: Path) -> None:
    """Exit 1 when a file was rejected (the others were processed): a failure for cron to report."""
    if failed:
        fail(f"{len(failed)} of {processed} inbox files failed ({', '.join(failed)}); "
             f"the reasons are in {inbox_dir / 'failed'}")


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
    timeout: Annotated[float | None, typer.Option(help="Stop the query after this many seconds, printing included "
                                                  "(default: UNIROUTE_SQL_TIMEOUT_SECONDS, 30).")] = None,
    max_rows: Annotated[int, typer.Option("--max-rows", help="Print at most this many rows, and say so on stderr "
                                          "when there were more; 0: every row (CSV and JSON only, which stream "
                                          "them in batches).")] = DEFAULT_MAX_ROWS,
):
    """Run a read-only SQL query on the store (sandboxed: SELECT only, no file or network access).

    Rows stream out in batches within UNIROUTE_SQL_MEMORY_LIMIT and the timeout; a sort larger than memory
    spills to $UNIROUTE_HOME/tmp (removed afterwards). Ctrl-C stops the query (exit code 130). While a build,
    ingest or onboarding holds the store, the query runs on the published snapshot's tables instead, and a line
    on stderr says which version answered.
    """
    flagged = [name for name, on in (("json", as_json), ("csv", as_csv)) if on]
    if fmt is not None and fmt not in FORMATS:
        fail(f"--format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    if len(set(flagged + ([fmt] if fmt else []))) > 1:
        fail(f"choose one output format, not {' and '.join(sorted(set(flagged + ([fmt] if fmt else []))))}")
    fmt = fmt or (flagged[0] if flagged else "table")
    settings = settings_from_env()
    if timeout is not None and not timeout > 0:
        fail(f"--timeout must be a number of seconds > 0, not {timeout}")
    if max_rows < 0 or (max_rows == 0 and fmt not in ("csv", "json")):
        fail(f"--max-rows must be a number of rows >= 1, not {max_rows}" if max_rows < 0 else
             f"--max-rows 0 (every row) streams CSV or JSON only; a {fmt} needs every row in memory: add --csv or "
             "--json, or give a cap")
    try:
        size_bytes(settings.sql_temp_limit)
    except ValueError as exc:
        fail(f"UNIROUTE_SQL_TEMP_LIMIT: {exc}")
    # No home, no store (the query fails in one line): nothing is created for it.
    spill = private_temp_dir(settings.tmp_dir) if settings.home.is_dir() else contextlib.nullcontext(None)
    with one_line_errors(), ctrl_c_cancels() as cancel, spill as temp:
        sandbox = Sandbox(timeout_seconds=timeout or settings.sql_timeout_seconds,
                          memory_limit=settings.sql_memory_limit, temp_directory=temp,
                          max_temp_size=settings.sql_temp_limit, spill=temp is not None)
        try:
            result = run_user_sql(settings.db_path, settings.published_dir, statement, sandbox,
                                  max_rows=max_rows or None, cancel=cancel,
                                  wait_seconds=settings.store_wait_seconds, on_wait=say)
            if result.note:
                say(result.note)
            with result.rows:
                shown = write_rows(result.frames, fmt)
            if result.rows.truncated:
                say(cut_off_notice(shown))
        except SqlRefused as exc:
            fail(str(exc), code=EXIT_REFUSED)
        except SqlInterrupted as exc:
            fail(str(exc), code=EXIT_INTERRUPTED)


@models_app.command("set-price")
def models_set_price(
    model: Annotated[str | None, typer.Argument(help="Model name as it appears in the logs.")] = None,
    input_price: Annotated[float | None, typer.Option("--input", help="Price per million input tokens.")] = None,
    output_price: Annotated[float | None, typer.Option("--output", help="Price per million output tokens.")] = None,
    per_call: Annotated[float | None, typer.Option("--per-call", help="Price per call (the unit of the logs' costs); "
                                                   "what routing charges once in force.")] = None,
    valid_from: Annotated[str | None, typer.Option("--from", help="The date the price holds from (YYYY-MM-DD).")]
        = None,
    file: Annotated[Path | None, typer.Option("--file", help="Set many at once: JSON lines, a JSON list or a CSV with "
                                              "model, from, and input and output or per_call; all or none.")] = None,
    as_json: JsonFlag = False,
):
    """Record a model's price from a date: --input X --output Y (per million tokens) or --per-call C, and --from
    DATE; or --file. The next build or onboarding routes with the prices in force (its price_snapshot)."""
    settings = settings_from_env()
    if (file is None) == (model is None):
        fail("give MODEL with --input/--output or --per-call and --from, or --file")
    with one_line_errors():
        prices = prices_from_file(file) if file is not None else [
            checked_price("set-price", model, valid_from, input_price, output_price, per_call)]
        line = operations.set_prices(context(settings), prices, str(file) if file is not None else "")
    typer.echo(json.dumps({"prices": [p.line() for p in prices], "summary": line}) if as_json else line)


@models_app.command("list")
def models_list(as_json: JsonFlag = False):
    """List the models with their status, default cost, their results' mean cost and count."""
    with one_line_errors():
        frame = read_only_query(settings_from_env().db_path, query_text("models_list"))
    print_frame(frame, as_json)


@models_app.command("set-cost")
def models_set_cost(
    model: Annotated[str | None, typer.Argument(help="Model name as it appears in the logs.")] = None,
    cost: Annotated[float | None, typer.Argument(help="Cost per query (any unit, the same for every model).")] = None,
    file: Annotated[Path | None, typer.Option("--file", help="Set many at once: a JSON object {model: cost} (or "
                                              "{model: {\"cost\": ...}}), or JSON lines / CSV with model and cost; "
                                              "all or none.")] = None,
    as_json: JsonFlag = False,
):
    """Set models' default costs, used where their result rows carry no cost: one MODEL COST, or --file."""
    settings = settings_from_env()
    if (file is None) == (model is None or cost is None) or (file is not None and model is not None):
        fail("give MODEL COST, or --file with a cost per model")
    with one_line_errors():
        costs = costs_from_file(file) if file is not None else {model: cost}
        line = operations.set_costs(context(settings), costs, str(file) if file is not None else "")
    typer.echo(json.dumps({"costs": costs, "summary": line}) if as_json else line)
