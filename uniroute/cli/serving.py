"""Commands on the serving side: route prompts, publish the routing tables, query with SQL, the pool's status."""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from uniroute import operations  # a facade importing each operation's module on first use
from uniroute.cli.app import (
    EXIT_INTERRUPTED,
    EXIT_REFUSED,
    JsonFlag,
    app,
    context,
    fail,
    one_line_errors,
    print_frame,
    say,
    settings_from_env,
    warn,
)
from uniroute.cli.sql_output import DEFAULT_MAX_ROWS, ctrl_c_cancels, cut_off_notice, write_rows

# What a command needs beyond Typer is imported inside it (cli/app.py says why).


@app.command()
def route(
    texts: Annotated[list[str] | None, typer.Argument(help="Prompts to route.")] = None,
    file: Annotated[Path | None, typer.Option("--file", help="Route the prompts of a JSONL ({\"prompt\": ...}) or "
                                              "CSV (`prompt` column) file; writes JSON lines.")] = None,
    lam: Annotated[float | None, typer.Option("--lambda", help="Cost weight: argmin loss + lambda * cost.")] = None,
    budget: Annotated[
        float | None, typer.Option(help="Target mean cost as a fraction (0, 1] of the priciest model's. With neither "
                                   "--budget nor --lambda: the default budget, the cheapest setting that keeps 90% of "
                                   "the gain from the cheapest routing's expected score to the best (said on stderr; "
                                   "the output's `setting` column too).")
    ] = None,
    max_cost: Annotated[
        float | None, typer.Option("--max-cost", help="A hard cap on the expected mean cost per prompt, in the data's "
                                   "cost unit: the best expected quality within it, calibrated on the recent "
                                   "traffic (else the validation prompts; said on stderr).")
    ] = None,
    max_latency: Annotated[
        float | None, typer.Option("--max-latency", help="Leave out the models whose median latency, recorded by "
                                   "the gateway over the traffic window, is above this many seconds (beside any "
                                   "other setting); a model with no recorded latency stays in, said on stderr.")
    ] = None,
    pool: Annotated[
        str | None, typer.Option(help="Comma-separated models to choose among (default: the active pool); "
                                 'a name with a comma goes in double quotes, CSV-style: \'"GPT, mini",other\'.')
    ] = None,
    log_decisions: Annotated[
        bool, typer.Option("--log", help="Also append the decisions to the routing_log table (in a store session).")
    ] = False,
    no_log: Annotated[
        bool, typer.Option("--no-log", help="Do not record the decisions (by default each is recorded to "
                           "$UNIROUTE_HOME/spool/decisions, which `uniroute inbox` loads into routing_decisions).")
    ] = False,
    router: Annotated[str | None, typer.Option("--router", help="Route with this stored router version instead of "
                                               "the champion (a challenger, a candidate kind, an older version).")]
        = None,
    explain: Annotated[bool, typer.Option("--explain", help="Show, per prompt and candidate model, the terms of "
                                          "the argmin: expected error (with its 95% interval where the router "
                                          "keeps counts), cost, lambda x cost, total and rank; rank 1 is chosen.")]
        = False,
    as_json: JsonFlag = False,
):
    """Route prompts with the champion router (the published snapshot while the store is busy)."""
    from uniroute.frame_output import exact_records
    from uniroute.pipeline.serving.route import DEFAULT_SETTING, RoutingRequest, default_setting_line, pool_names

    if texts and file is not None:
        fail("give prompts as arguments or --file, not both")
    if file is None and not (explain or log_decisions or router is not None) and \
            (quick := _routed_quickly(texts or [], lam, budget, pool, max_cost, max_latency, no_log)) is not None:
        # Answered without the store, pandas or pydantic (operations.route_quickly): what route() would answer
        answer = quick.decided
        if answer.columns["setting"][0] == DEFAULT_SETTING:
            say(default_setting_line(float(answer.columns["budget"][0])))
        if as_json:
            typer.echo(json.dumps(answer.records(leave_out=("text_hash",))))
        else:
            print_frame(answer.frame().drop(columns=["text_hash"]), as_json)
        return
    settings = settings_from_env()
    with one_line_errors():
        request = RoutingRequest(lam, budget, None if pool is None else tuple(pool_names(pool)), max_cost,
                                 max_latency)
        extras: list[dict] = []
        if file is not None:
            texts, extras = operations.prompts_from_file(file)
        routed = operations.route(context(settings), texts or [], request, log=log_decisions, router_id=router,
                                  record=not no_log, source="file" if file is not None else "cli",
                                  explain=explain)
    if routed.from_snapshot:
        say(f"answered from the {routed.source}")
    if request.max_cost is not None or request.budget is not None:
        say(f"{'max cost' if request.max_cost is not None else 'budget'} calibrated on the {routed.calibration}")
    if routed.latency_note is not None:
        say(routed.latency_note)
    if len(routed.decisions) and routed.decisions["setting"].iloc[0] == DEFAULT_SETTING:
        say(default_setting_line(float(routed.decisions["budget"].iloc[0])))
    shown = routed.decisions.drop(columns=["text_hash"])
    if file is not None:
        # Each line keeps the input's other fields (an id, a user, ...) before the decision; a field named like
        # a decision field comes back as input_<name>, so the decision is never overwritten.
        decided = exact_records(shown)
        for extra, record in zip(extras, decided, strict=True):
            kept = {(f"input_{k}" if k in record else k): v for k, v in extra.items()}
            sys.stdout.write(json.dumps({**kept, **record}, default=str) + "\n")
        return
    if explain and not as_json:
        from uniroute.cli.explain_output import explanation_text

        typer.echo(explanation_text(shown, texts or []))
    elif as_json:  # exact floats: a reader can recompute each argmin from what was printed
        typer.echo(json.dumps(exact_records(shown)))
    else:
        print_frame(shown, as_json)


def _routed_quickly(texts: list[str], lam: float | None, budget: float | None, pool: str | None,
                    max_cost: float | None, max_latency: float | None, no_log: bool) -> operations.RoutedQuickly | None:
    """The request answered by operations.route_quickly, or None where it cannot answer as route() would (a
    UNIROUTE_ variable only Settings can read, a setting that reads the store's traffic, a snapshot that does not
    prove to be the store's champion)."""
    from uniroute.environment import apply_offline_environment, quick_settings
    from uniroute.pipeline.serving.route import RoutingRequest, pool_names

    settings = quick_settings()
    if settings is None:
        return None
    apply_offline_environment(settings.home)
    with one_line_errors():
        request = RoutingRequest(lam, budget, None if pool is None else tuple(pool_names(pool)), max_cost,
                                 max_latency)
        return operations.route_quickly(settings, texts, request, record=not no_log, source="cli", on_warning=warn)


@app.command("publish")
def publish_command(
    force: Annotated[bool, typer.Option(help="Publish even if nothing changed.")] = False,
    as_json: JsonFlag = False,
):
    """Write the champion's routing tables for the active pool (atomic, versioned)."""
    settings = settings_from_env()
    with one_line_errors():
        result = operations.publish(context(settings), force=force)
    typer.echo(json.dumps(result.as_dict()) if as_json else result.line())


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
    from uniroute.frame_output import FORMATS
    from uniroute.pipeline.serving.user_sql import run_user_sql
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


@app.command()
def status(as_json: JsonFlag = False) -> None:
    """The pool on one screen: champion, active and retired models, the current publication, the last build,
    onboarding and publish, and what waits in the inbox. Never waits for a running operation."""
    from uniroute.pipeline.status import pool_status

    settings = settings_from_env()
    with one_line_errors():
        result = pool_status(settings.home, settings.db_path, settings.published_dir, settings.inbox_dir,
                             settings.spool_dir, mlflow=settings.mlflow,
                             settle_seconds=settings.inbox_settle_seconds)
    if as_json:
        typer.echo(json.dumps(result.as_dict(), default=str))
        return
    for line in result.lines():
        typer.echo(line)
