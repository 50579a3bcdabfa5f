"""Commands for data coming in: ingest logs, process the inbox, write synthetic logs, inspect and edit models."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from uniroute import operations
from uniroute.cli.app import (
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
from uniroute.errors import UnirouteError

if TYPE_CHECKING:
    from uniroute.ingest import InboxOutcome, IngestSummary

# What a command needs beyond Typer is imported inside it (cli/app.py says why).


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
    from uniroute.ingest import IngestError

    settings = settings_from_env()
    if split is not None and split not in ("train", "val", "test"):
        fail(f"--split must be train, val or test, not {split!r}")
    paths = files_to_ingest(paths)  # before the store is created: a missing path changes nothing
    ctx = context(settings)
    summaries: list[IngestSummary] = []
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
    from uniroute.store import query_text, read_only_query

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
    from uniroute.ingest.load import regular_file

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
        _fail_on_rejected(run.outcomes)
        return
    for outcome in run.outcomes:
        detail = outcome.summary.line() if outcome.summary is not None else outcome.error
        typer.echo(f"{outcome.name}: {outcome.status} -> {outcome.moved_to} ({detail})")
    if not run.outcomes:
        typer.echo(f"nothing waiting in {settings.inbox_dir}")
    if run.onboarding is not None:
        typer.echo(run.onboarding.line())
    _fail_on_rejected(run.outcomes)


def _fail_on_rejected(outcomes: Sequence[InboxOutcome]) -> None:
    """Exit 1 when a file was rejected (the others were processed): a failure for cron to report, naming the
    failed/ folder each reason is in (the inbox's, or the decision spool's)."""
    failed = [o for o in outcomes if o.status == "failed"]
    if failed:
        folders = " and ".join(dict.fromkeys(str(Path(o.moved_to).parent) for o in failed))
        fail(f"{len(failed)} of {len(outcomes)} inbox files failed ({', '.join(o.name for o in failed)}); "
             f"the reasons are in {folders}")


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
    from uniroute.ingest.prices import checked_price, prices_from_file

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
    from uniroute.store import query_text, read_only_query

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
    from uniroute.ingest.cost_file import costs_from_file

    settings = settings_from_env()
    if (file is None) == (model is None or cost is None) or (file is not None and model is not None):
        fail("give MODEL COST, or --file with a cost per model")
    with one_line_errors():
        costs: dict[str, float] = (costs_from_file(file) if file is not None
                                   else {model: cost})  # type: ignore[dict-item]  # both given (checked above)
        line = operations.set_costs(context(settings), costs, str(file) if file is not None else "")
    typer.echo(json.dumps({"costs": costs, "summary": line}) if as_json else line)
