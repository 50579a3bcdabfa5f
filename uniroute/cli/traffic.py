"""`uniroute replay`: re-route logged decisions with any stored router version, at other prices or pools."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer

from uniroute import operations
from uniroute.cli.app import JsonFlag, app, context, fail, one_line_errors, settings_from_env


def _since(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        fail(f"--since {text!r} is not a date or time (ISO 8601, UTC: 2026-11-20 or 2026-11-20T08:00)")


@app.command("replay")
def replay_command(
    last: Annotated[int | None, typer.Option("--last", help="Replay the last N logged decisions.")] = None,
    since: Annotated[str | None, typer.Option("--since", help="Replay the decisions logged since this UTC date or "
                                              "time (ISO 8601). Neither --last nor --since: every decision.")] = None,
    router: Annotated[str, typer.Option("--router", help="champion, challenger (the newest build not promoted) or "
                                        "a stored router id.")] = "champion",
    without: Annotated[str | None, typer.Option("--without", help="Models to take out of the pool, "
                                                "comma-separated.")] = None,
    with_models: Annotated[str | None, typer.Option("--with", help="Models the router holds a row for to add to "
                                                    "the pool (e.g. retired ones), comma-separated.")] = None,
    prices: Annotated[Path | None, typer.Option("--prices", help="A prices file (model, from, per_call): replay at "
                                                "these costs per call, each decision at the prices in force when it "
                                                "was decided.")] = None,
    budget: Annotated[float | None, typer.Option("--budget", help="Replay at this budget (a fraction (0, 1] of the "
                                                 "priciest pool model's cost).")] = None,
    lam: Annotated[float | None, typer.Option("--lambda", help="Replay at this lambda. None of --lambda, --budget "
                                              "or --max-cost: each decision at its logged setting.")] = None,
    max_cost: Annotated[float | None, typer.Option("--max-cost", help="Replay at the best expected quality whose "
                                                   "expected mean cost per prompt on the replayed decisions stays "
                                                   "within this cap (the data's cost unit).")] = None,
    as_json: JsonFlag = False,
):
    """Re-route logged decisions (their stored embeddings, no prompt text) with a stored router version, at other
    prices, with models added or removed: per model its traffic share, expected quality and cost with 95% intervals
    and the difference from what was served; with outcomes, the replayed policy's realised quality three ways."""
    from uniroute.pipeline.serving.route import pool_names
    from uniroute.pipeline.traffic.replay import ReplaySetting, ReplayWindow

    settings = settings_from_env()
    with one_line_errors(OSError):
        window = ReplayWindow(last, _since(since))
        setting = ReplaySetting(lam, budget, max_cost)
        done = operations.replay(context(settings), window, router,
                                 without=pool_names(without) if without else (),
                                 with_models=pool_names(with_models) if with_models else (),
                                 prices=prices, setting=setting)
    if as_json:
        typer.echo(json.dumps(done.as_dict(), default=str))
    else:
        typer.echo(done.markdown(), nl=False)
