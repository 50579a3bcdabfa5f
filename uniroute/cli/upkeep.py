"""`uniroute doctor`: check the invariants between the store, MLflow and the published snapshots; repair."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from uniroute import operations
from uniroute.cli.app import JsonFlag, app, context, one_line_errors, settings_from_env


@app.command()
def doctor(
    check: Annotated[bool, typer.Option("--check", help="Only report; repair nothing and write nothing.")] = False,
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
        from uniroute.gateway.deployments import published_coverage

        coverage = published_coverage(settings.deployments_file, settings.published_dir)
        if coverage is not None:  # the gateway's deployments against the published pool, in one line
            typer.echo(coverage)
    if not report.healthy:
        raise typer.Exit(code=1)
