"""`uniroute status`: champion, pool, current publication, last runs and the inbox on one screen."""

from __future__ import annotations

import json

import typer

from uniroute.cli.app import JsonFlag, app, one_line_errors, settings_from_env
from uniroute.pipeline.status import pool_status


@app.command()
def status(as_json: JsonFlag = False) -> None:
    """The pool on one screen: champion, active and retired models, the current publication, the last build,
    onboarding and publish, and what waits in the inbox. Never waits for a running operation."""
    settings = settings_from_env()
    with one_line_errors():
        result = pool_status(settings.home, settings.db_path, settings.published_dir, settings.inbox_dir)
    if as_json:
        typer.echo(json.dumps(result.as_dict(), default=str))
        return
    for line in result.lines():
        typer.echo(line)
