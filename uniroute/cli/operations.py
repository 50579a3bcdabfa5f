"""Commands for operations: build, onboard, retire, publish, route, doctor.

Each state-changing command is one store session (one transaction, recorded in the operations log); what is
derived from the store (MLflow, `published/current`) is brought up to date right after it commits.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from uniroute.cli.app import (
    JsonFlag,
    app,
    fail,
    one_line_errors,
    print_frame,
    reconcile_after,
    say,
    session,
    settings_from_env,
)


@app.command("build")
def build_command(
    embedder: Annotated[str | None, typer.Option(
        help="minilm, minilm-onnx, static or tfidf (default: UNIROUTE_EMBEDDER)."
    )] = None,
    seed: Annotated[int | None, typer.Option(help="Seed for K-means and the LearnedMap.")] = None,
    kinds: Annotated[str | None, typer.Option(
        help="Comma-separated router kinds to fit and choose among (default: UNIROUTE_BUILD_KINDS, else all of "
             "kmeans,kmeans_shrunk,learnedmap,knn); one kind serves that kind without a choice."
    )] = None,
    as_json: JsonFlag = False,
):
    """The nightly job on what is in the store: tune every router kind, serve the one chosen on validation
    prompts (its table of candidates is printed), evaluate on test prompts, version, log to MLflow."""
    from uniroute.embed import EMBEDDERS
    from uniroute.pipeline.build import run_build
    from uniroute.pipeline.build_candidates import KindError, checked_kinds
    from uniroute.pipeline.build_data import BuildError

    settings = settings_from_env()
    name, seed = embedder or settings.embedder, settings.seed if seed is None else seed
    if name == "attributes":  # its heads would not travel with the router (embed/portable.py)
        fail("the attributes embedder is for evaluation only (`uniroute evaluate --embedder attributes`): routers "
             f"built on it cannot be stored yet; build with one of {', '.join(EMBEDDERS)}")
    if name not in EMBEDDERS:
        fail(f"unknown embedder {name!r}; build with one of {', '.join(EMBEDDERS)}")
    with one_line_errors(KindError):  # a bad argument fails before the build opens the store
        kinds = kinds if kinds is not None else settings.build_kinds
        chosen = checked_kinds(kinds.split(",")) if kinds.strip() else None
    inputs = f"embedder={name} seed={seed}" + (f" kinds={','.join(chosen)}" if chosen is not None else "")
    with one_line_errors(BuildError), session(settings, "build", inputs=inputs) as s:
        result = run_build(s.con, name, seed, cache_dir=settings.cache_dir, kinds=chosen)
        s.detail = result.line()
    with one_line_errors():
        reconcile_after(settings)
    if result.excluded_models:  # a note for the user, not a log warning (stderr: --json stays parseable)
        say(f"left out (no cost on any result; `uniroute models set-cost MODEL COST`): "
            f"{', '.join(result.excluded_models)}")
    if as_json:
        typer.echo(json.dumps(result.as_dict(), default=str))
        return
    typer.echo(result.line())
    typer.echo(result.selection)
    print_frame(result.candidates_table().drop(columns=["build_router_id"], errors="ignore"), False)


@app.command()
def onboard(
    results: Annotated[list[Path], typer.Option("--results", help="Validation results of the new model(s), any "
                                                "ingest format; prompts without a split count as validation.")],
    as_json: JsonFlag = False,
):
    """Add or refresh models from their validation results, on the champion's frozen clusters.

    Ingesting the file and writing the new router version are one transaction; running it again is safe and
    says when the models are already routable.
    """
    from uniroute.ingest import IngestError, ingest_file
    from uniroute.pipeline.onboard import OnboardError, onboard_models

    settings = settings_from_env()
    with one_line_errors(IngestError, OnboardError, LookupError), session(
        settings, "onboard", inputs=",".join(map(str, results))
    ) as s:
        models: list[str] = []
        problems: list[str] = []
        for path in results:
            summary = ingest_file(s.con, path, split="val", progress=not as_json)
            models += [m for m in summary.models if m not in models]
            if summary.first_problem:
                problems.append(f"{path.name}: {summary.rows_quarantined:,} rows quarantined, {summary.first_problem}")
        if not models:
            why = f" ({'; '.join(problems)})" if problems else ""
            raise OnboardError(f"no valid results in {', '.join(map(str, results))}: nothing to onboard{why}")
        result = onboard_models(s.con, models, cache_dir=settings.cache_dir)
        s.detail = result.line()
    with one_line_errors():
        reconcile_after(settings)
    for problem in problems:  # rows that did not land (e.g. every row of a second model): never silently
        say(f"{problem} (see the quarantine table)")
    typer.echo(json.dumps(result.as_dict()) if as_json else result.line())


@app.command()
def retire(
    model: Annotated[str, typer.Argument(help="Model to take out of the pool.")],
    as_json: JsonFlag = False,
):
    """Take a model out of the pool at once: a new router version without it, republished if anything was.

    Its results stay; onboarding it again brings it back.
    """
    from uniroute.pipeline.publish import latest_publication, publish_champion, switch_current_after_commit
    from uniroute.pipeline.retire import RetireError, retire_model
    from uniroute.pipeline.snapshot import PublishError

    settings = settings_from_env()
    published = None
    with one_line_errors(RetireError, PublishError), session(settings, "retire", inputs=model) as s:
        result = retire_model(s.con, model)
        if result.router_id is not None and latest_publication(s.con) is not None:
            published = publish_champion(s.con, settings.published_dir)
            switch_current_after_commit(s, settings.published_dir, published)
        s.detail = result.line()
    with one_line_errors():
        reconcile_after(settings)
    if as_json:
        typer.echo(json.dumps({**result.as_dict(), "published": None if published is None else published.as_dict()}))
        return
    typer.echo(result.line())
    if published is not None and published.published:
        typer.echo(f"republished {published.version} without {model}")


@app.command("publish")
def publish_command(
    force: Annotated[bool, typer.Option(help="Publish even if nothing changed.")] = False,
    as_json: JsonFlag = False,
):
    """Write the champion's routing tables for the active pool (atomic, versioned)."""
    from uniroute.pipeline.publish import publish_champion, switch_current_after_commit
    from uniroute.pipeline.snapshot import PublishError

    settings = settings_from_env()
    with one_line_errors(PublishError, LookupError), session(settings, "publish") as s:
        result = publish_champion(s.con, settings.published_dir, force=force)
        switch_current_after_commit(s, settings.published_dir, result)
        s.detail = result.line()
    with one_line_errors():
        reconcile_after(settings)
    typer.echo(json.dumps(result.as_dict()) if as_json else result.line())


def pool_names(text: str) -> list[str]:
    """The model names of a --pool value: comma-separated, CSV quoting for a name that holds a comma or quote."""
    return next(csv.reader([text], skipinitialspace=True), [])


def _prompts_from_file(path: Path) -> tuple[list[str], list[str | None]]:
    """The prompts (and their ids, if given) of a JSONL file of {"prompt": ...} objects or a CSV with a
    `prompt` column; RoutingError naming the line for anything else."""
    from uniroute.pipeline.serving import RoutingError

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RoutingError(f"{path}: cannot read the prompts: {exc}") from exc
    prompts: list[str] = []
    ids: list[str | None] = []
    if text.lstrip().startswith("{"):
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise RoutingError(f"{path}: line {number} is not JSON ({exc.msg})") from exc
            if not isinstance(record, dict) or not isinstance(record.get("prompt"), str):
                raise RoutingError(f'{path}: line {number} has no "prompt" text')
            prompts.append(record["prompt"])
            ids.append(None if record.get("id") is None else str(record["id"]))
        return prompts, ids
    import csv
    import io

    reader = csv.DictReader(io.StringIO(text))
    if reader.fieldnames is None or "prompt" not in reader.fieldnames:
        raise RoutingError(f"{path}: a CSV of prompts needs a `prompt` column (or give JSON lines)")
    for row in reader:
        prompts.append(row["prompt"])
        ids.append(row.get("id"))
    return prompts, ids


@app.command()
def route(
    texts: Annotated[list[str] | None, typer.Argument(help="Prompts to route.")] = None,
    file: Annotated[Path | None, typer.Option("--file", help="Route the prompts of a JSONL ({\"prompt\": ...}) or "
                                              "CSV (`prompt` column) file; writes JSON lines.")] = None,
    lam: Annotated[float | None, typer.Option("--lambda", help="Cost weight: argmin loss + lambda * cost.")] = None,
    budget: Annotated[
        float | None, typer.Option(help="Target mean cost as a fraction (0, 1] of the priciest model's.")
    ] = None,
    pool: Annotated[
        str | None, typer.Option(help="Comma-separated models to choose among (default: the active pool); "
                                 'a name with a comma goes in double quotes, CSV-style: \'"GPT, mini",other\'.')
    ] = None,
    log_decisions: Annotated[
        bool, typer.Option("--log", help="Append the decisions to the routing_log table.")
    ] = False,
    as_json: JsonFlag = False,
):
    """Route prompts with the champion router (the published snapshot while the store is busy)."""
    from uniroute.pipeline.serving import RoutingError, route_texts, routing_source
    from uniroute.pipeline.serving import log_decisions as write_log

    if texts and file is not None:
        fail("give prompts as arguments or --file, not both")
    settings = settings_from_env()
    with one_line_errors(RoutingError, LookupError, ValueError):
        ids: list[str | None] = []
        if file is not None:
            texts, ids = _prompts_from_file(file)
        source = routing_source(settings.db_path, settings.published_dir)
        if source.source.startswith("published"):
            say(f"answered from the {source.source}")
        decisions = route_texts(source, texts or [], lam=lam, budget=budget,
                                pool=pool_names(pool) if pool is not None else None, cache_dir=settings.cache_dir)
    if log_decisions:
        with one_line_errors(), session(settings, "route-log", inputs=source.router_id) as s:
            s.detail = f"batch {write_log(s.con, decisions)}"
    shown = decisions.drop(columns=["text_hash"])
    if file is not None:
        if any(i is not None for i in ids):
            shown.insert(1, "id", ids)
        for record in json.loads(shown.to_json(orient="records")):
            sys.stdout.write(json.dumps(record) + "\n")
        return
    print_frame(shown, as_json)


@app.command()
def doctor(
    check: Annotated[bool, typer.Option("--check", help="Only report; repair nothing.")] = False,
    as_json: JsonFlag = False,
):
    """Check the invariants between the store, MLflow and the published snapshots; report and repair.

    The store is the source of truth: killed runs are marked interrupted, active models missing from the
    champion are onboarded, `published/current` follows the newest publication, stray snapshot folders are
    removed, and MLflow's runs, versions and champion alias follow the store. Exit 1 if anything stays broken.
    """
    from uniroute.pipeline.reconcile import reconcile

    settings = settings_from_env()
    with one_line_errors(), session(settings, "doctor", inputs="check" if check else "repair") as s:
        report = reconcile(s, settings.published_dir, *settings.tracking,
                           inbox_dir=settings.inbox_dir, repair=not check, cache_dir=settings.cache_dir,
                           tmp_dir=settings.tmp_dir)
        s.detail = f"{len(report.repaired)} repaired, healthy={report.healthy}"
    if as_json:
        typer.echo(json.dumps([f.__dict__ for f in report.findings]))
    else:
        for line in report.lines():
            typer.echo(line)
    if not report.healthy:
        raise typer.Exit(code=1)
