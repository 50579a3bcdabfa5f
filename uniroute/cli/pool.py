"""Commands on the pool: onboard, onboarding-set, retire, rollback.

Each calls one function of the operations layer (uniroute/operations/), which opens the store session, records
the run, switches published state after the commit and reconciles; a command only reads its options and prints."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from uniroute import operations
from uniroute.cli.app import JsonFlag, app, context, one_line_errors, say, settings_from_env


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
        done = operations.onboard(context(settings, mlflow_after=True), results=results,
                                  progress=not as_json, reactivate=reactivate)
    for problem in done.problems:  # rows that did not land (e.g. every row of a second model): never silently
        say(f"{problem} (see the quarantine table)")
    if done.mlflow_follow_up is not None:
        say(done.mlflow_follow_up.line())
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
