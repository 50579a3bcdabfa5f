"""The Typer application, and what every command shares: settings from the environment, one-line errors, output."""

from __future__ import annotations

import logging
import sys
from typing import Annotated

import typer

from uniroute.settings import Settings, apply_offline_environment

app = typer.Typer(
    help=(
        "Route each prompt to the right LLM in a pool that keeps changing (UniRoute). "
        "All state lives under $UNIROUTE_HOME (default ./.uniroute)."
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
models_app = typer.Typer(help="Inspect and edit the model registry.", no_args_is_help=True)
app.add_typer(models_app, name="models")

JsonFlag = Annotated[bool, typer.Option("--json", help="Print the result as JSON on stdout.")]


def settings_from_env() -> Settings:
    settings = Settings()
    apply_offline_environment(settings)
    return settings


def fail(message: str) -> None:
    """One line on stderr, non-zero exit."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code=1)


@app.callback()
def _main(verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log progress details.")] = False):
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    if not verbose:  # MLflow and its migrations log routine INFO lines that would drown the one-line results
        for noisy in ("mlflow", "alembic"):
            logging.getLogger(noisy).setLevel(logging.WARNING)


def print_frame(frame, as_json: bool) -> None:
    from uniroute.cli.formats import render

    typer.echo(render(frame, "json" if as_json else "table"))
