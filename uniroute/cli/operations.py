"""Commands for operations: build, onboard, retire, publish, route, doctor.

Each calls one function of the operations layer (uniroute/operations/), which opens the store session, records
the run, switches published state after the commit and reconciles; a command only reads its options and prints.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from uniroute import operations
from uniroute.cli.app import JsonFlag, app, context, fail, one_line_errors, print_frame, say, settings_from_env
from uniroute.cli.explain_output import explanation_text
from uniroute.formats import exact_records
from uniroute.pipeline.serving import DEFAULT_SETTING, RoutingRequest, default_setting_line, pool_names
from uniroute.settings import comma_separated


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


@app.command()
def onboard(
    results: Annotated[list[Path], typer.Option("--results", help="Validation results of the new model(s), any "
                                                "ingest format; prompts without a split count as validation.")],
    reactivate: Annotated[bool, typer.Option("--reactivate", help="Bring back a model that was retired (without "
                                             "it, a retired model's results are refused).")] = False,
    as_json: JsonFlag = False,
):
    """Add or refresh models from their validation results, on the champion's frozen clusters.

    Ingesting the file and writing the new router version are one transaction; running it again is safe and
    says when the models are already routable. Before the first build the results are stored and the models
    join at the next build.
    """
    settings = settings_from_env()
    with one_line_errors():
        done = operations.onboard(context(settings), results=results, progress=not as_json, reactivate=reactivate)
    for problem in done.problems:  # rows that did not land (e.g. every row of a second model): never silently
        say(f"{problem} (see the quarantine table)")
    typer.echo(json.dumps(done.as_dict()) if as_json else done.line())


@app.command("onboarding-set")
def onboarding_set_command(
    size: Annotated[int, typer.Option("--size", help="How many validation prompts to ask the new model.")],
    out: Annotated[Path, typer.Option("--out", help="Where to write them: .jsonl (one {\"prompt_id\", "
                                      "\"prompt\", \"cluster\", \"rank\"} per line) or .csv.")],
    model: Annotated[str | None, typer.Option(
        "--model", help="Continue for a model that answered some already: the next best prompts given its "
        "answers so far (its results in the store).")] = None,
    strategy: Annotated[str, typer.Option(help="best (the recommended one, today allocated: more answers where "
                                          "traffic is large and the pool's LLMs disagree, random within a "
                                          "cluster), stratified (every cluster by its traffic share), anchored "
                                          "(contested typical prompts first; for the evaluation protocol) or "
                                          "random.")] = "best",
    as_json: JsonFlag = False,
):
    """Choose the validation prompts a new LLM should answer to join the pool, best first.

    Send them to the new model, put its answers (prompt_id, model, score, cost) in the inbox or give them to
    `uniroute onboard --results`; with fewer answers than the set, the first ones matter most. The choice uses
    the champion's clusters and the pool's answers only.
    """
    settings = settings_from_env()
    with one_line_errors():
        chosen = operations.onboarding_set(context(settings), size, out, strategy=strategy, model=model,
                                           seed=settings.seed)
    if as_json:
        typer.echo(json.dumps({"path": str(out), "router_id": chosen.router_id, "strategy": chosen.strategy,
                               "model": chosen.model, "answered": chosen.answered, "chosen": len(chosen.prompts),
                               "candidates": chosen.candidates}))
        return
    typer.echo(f"{chosen.line()}: wrote {out}")


@app.command()
def retire(
    model: Annotated[str, typer.Argument(help="Model to take out of the pool.")],
    as_json: JsonFlag = False,
):
    """Take a model out of the pool at once: a new router version without it, republished if anything was.

    Its results stay, and later results never bring it back; `uniroute onboard --reactivate` does.
    """
    settings = settings_from_env()
    with one_line_errors():
        done = operations.retire(context(settings), model)
    if as_json:
        typer.echo(json.dumps(done.as_dict()))
        return
    typer.echo(done.result.line())
    if done.published is not None and done.published.published:
        typer.echo(f"republished {done.published.version} without {model}")


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
def rollback(
    router_id: Annotated[str | None, typer.Argument(
        help="The earlier champion to serve again (default: the champion before the current one; "
             "`uniroute sql \"select * from champion_history\"` lists them).")] = None,
    force: Annotated[bool, typer.Option(help="Roll back even to a version that does not route a model added since: "
                                        "that model is onboarded onto it from its validation results.")] = False,
    as_json: JsonFlag = False,
):
    """Serve an earlier champion again: the store's champion, `published/current` and MLflow's champion alias
    move back together, in one recorded operation.

    Nothing is deleted: the version rolled back from stays stored, and a later build competes with the version
    served. A version that was never the champion (a challenger, a candidate kind) is refused.
    """
    settings = settings_from_env()
    with one_line_errors():
        done = operations.rollback(context(settings), router_id, force=force)
    if as_json:
        typer.echo(json.dumps(done.as_dict()))
        return
    typer.echo(done.result.line())
    if done.published is not None and done.published.published:
        typer.echo(f"published {done.published.version} for {done.result.router_id}")


@app.command()
def route(
    texts: Annotated[list[str] | None, typer.Argument(help="Prompts to route.")] = None,
    file: Annotated[Path | None, typer.Option("--file", help="Route the prompts of a JSONL ({\"prompt\": ...}) or "
                                              "CSV (`prompt` column) file; writes JSON lines.")] = None,
    lam: Annotated[float | None, typer.Option("--lambda", help="Cost weight: argmin loss + lambda * cost.")] = None,
    budget: Annotated[
        float | None, typer.Option(help="Target mean cost as a fraction (0, 1] of the priciest model's. With neither "
                                   "--budget nor --lambda: the default budget, the cheapest whose expected score is "
                                   "within 0.01 of the best (said on stderr; the output's `setting` column too).")
    ] = None,
    max_cost: Annotated[
        float | None, typer.Option("--max-cost", help="A hard cap on the expected mean cost per prompt, in the data's "
                                   "cost unit: the best expected quality within it, calibrated on the recent "
                                   "traffic (else the validation prompts; said on stderr).")
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
    if texts and file is not None:
        fail("give prompts as arguments or --file, not both")
    settings = settings_from_env()
    with one_line_errors():
        request = RoutingRequest(lam, budget, None if pool is None else tuple(pool_names(pool)), max_cost)
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
        typer.echo(explanation_text(shown, texts or []))
    elif as_json:  # exact floats: a reader can recompute each argmin from what was printed
        typer.echo(json.dumps(exact_records(shown)))
    else:
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
    settings = settings_from_env()
    with one_line_errors():
        report = operations.doctor(context(settings), check=check)
    if as_json:
        typer.echo(json.dumps([f.__dict__ for f in report.findings]))
    else:
        for line in report.lines():
            typer.echo(line)
    if not report.healthy:
        raise typer.Exit(code=1)
