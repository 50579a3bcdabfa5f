"""Commands for data in: ingest logs, write synthetic logs, query the store, inspect and edit models."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Annotated

import typer

from uniroute.cli.app import (
    EXIT_INTERRUPTED,
    EXIT_REFUSED,
    JsonFlag,
    app,
    fail,
    models_app,
    one_line_errors,
    print_frame,
    reconcile_after,
    say,
    session,
    settings_from_env,
)
from uniroute.cli.sql_output import DEFAULT_MAX_ROWS


@app.command()
def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Benchmark log files (long CSV/JSONL/Parquet, "
                                                "RouterBench wide CSV, RouterDC JSON, pairwise preferences in the "
                                                "Chatbot Arena convention); detected by content.")],
    split: Annotated[str | None, typer.Option(help="Mark every prompt of these files as train, val or test.")] = None,
    as_json: JsonFlag = False,
):
    """Validate benchmark logs and load them into the store (one transaction per file)."""
    from uniroute.ingest import IngestError, ingest_file

    settings = settings_from_env()
    if split is not None and split not in ("train", "val", "test"):
        fail(f"--split must be train, val or test, not {split!r}")
    summaries = []
    for number, path in enumerate(paths):
        try:
            with one_line_errors(), session(settings, "ingest", inputs=str(path)) as s:
                summary = ingest_file(s.con, path, split=split, progress=not as_json)
                s.detail = summary.line()
        except IngestError as exc:
            if as_json:  # what did land is on stdout either way
                typer.echo(json.dumps([s.as_dict() for s in summaries]))
            rest = paths[number + 1:]
            fail(f"{exc}" + (f" (stopped there: {', '.join(map(str, rest))} not ingested)" if rest else ""))
        summaries.append(summary)
        if not as_json:
            typer.echo(summary.line())
    if as_json:
        typer.echo(json.dumps([s.as_dict() for s in summaries]))


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
    from uniroute.ingest import IngestError, process_inbox

    settings = settings_from_env()
    with one_line_errors(IngestError):
        outcomes = process_inbox(settings.db_path, settings.inbox_dir, settle_seconds=settings.inbox_settle_seconds,
                                 on_wait=say)
    landed = list(dict.fromkeys(m for o in outcomes for m in o.landed_models))
    onboarded = None
    if onboard and landed:
        from uniroute.pipeline import registry
        from uniroute.pipeline.onboard import OnboardError, onboard_models

        with one_line_errors(OnboardError), session(settings, "onboard", inputs=",".join(landed)) as s:
            if registry.champion_id(s.con) is not None:
                onboarded = onboard_models(s.con, landed, cache_dir=settings.cache_dir)
                s.detail = onboarded.line()
        if onboarded is not None:
            reconcile_after(settings)
    failed = [o.name for o in outcomes if o.status == "failed"]
    if as_json:
        typer.echo(json.dumps({"files": [o.as_dict() for o in outcomes],
                               "onboarded": None if onboarded is None else onboarded.as_dict()}))
        _fail_on_rejected(failed, len(outcomes), settings.inbox_dir)
        return
    for outcome in outcomes:
        detail = outcome.summary.line() if outcome.summary is not None else outcome.error
        typer.echo(f"{outcome.name}: {outcome.status} -> {outcome.moved_to} ({detail})")
    if not outcomes:
        typer.echo(f"nothing waiting in {settings.inbox_dir}")
    if onboarded is not None:
        typer.echo(onboarded.line())
    elif landed and onboard:
        typer.echo(f"{', '.join(landed)} will join the pool at the first build (no router yet)")
    _fail_on_rejected(failed, len(outcomes), settings.inbox_dir)


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
    from uniroute.cli.formats import FORMATS
    from uniroute.cli.sql_output import ctrl_c_cancels, cut_off_notice, write_rows
    from uniroute.pipeline.user_sql import run_user_sql
    from uniroute.store import Sandbox, SqlInterrupted, SqlRefused, private_temp_dir
    from uniroute.store.sql_stream import size_bytes

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
                          max_temp_size=settings.sql_temp_limit)
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


@models_app.command("list")
def models_list(as_json: JsonFlag = False):
    """List the models with their status and default cost."""
    from uniroute.store import read_only_query

    with one_line_errors():
        frame = read_only_query(settings_from_env().db_path, "select * from models order by model")
    print_frame(frame, as_json)


@models_app.command("set-cost")
def models_set_cost(
    model: Annotated[str, typer.Argument(help="Model name as it appears in the logs.")],
    cost: Annotated[float, typer.Argument(help="Cost per query (any unit, the same for every model).")],
):
    """Set a model's default cost, used where its result rows carry no cost."""
    from uniroute.ingest import IngestError, set_default_cost

    settings = settings_from_env()
    with one_line_errors(IngestError), session(settings, "set-cost", inputs=model) as s:
        set_default_cost(s.con, model, cost)
    typer.echo(f"{model}: default cost {cost}")
