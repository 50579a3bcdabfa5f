"""The Typer application, and what every command shares: settings from the environment, one-line errors, output."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any, NoReturn

import typer

from uniroute.settings import Settings, SettingsError, apply_offline_environment, load_settings

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
    """Settings from UNIROUTE_* variables; a bad value is one line naming the variable, never a traceback."""
    try:
        settings = load_settings()
    except SettingsError as exc:
        fail(str(exc))
    apply_offline_environment(settings)
    return settings


# Exit codes: 1 for an error, 2 for a refusal (a request that is not allowed, e.g. SQL that would write).
EXIT_ERROR = 1
EXIT_REFUSED = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a command stopped by Ctrl-C


def fail(message: str, code: int = EXIT_ERROR) -> NoReturn:
    """One line on stderr, non-zero exit."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code=code)


def say(message: str) -> None:
    """A one-line note on stderr (results go to stdout)."""
    typer.echo(message, err=True)


@contextmanager
def one_line_errors(*kinds: type[BaseException]) -> Iterator[None]:
    """Turn the library's errors (and the store's) into one line on stderr and exit code 1."""
    from uniroute.store import StoreError

    try:
        yield
    except (StoreError, *kinds) as exc:
        fail(str(exc))


@contextmanager
def session(settings: Settings, operation: str, inputs: str = "", atomic: bool = True) -> Iterator[Any]:
    """A store session that says, once, on stderr when it waits for another operation to finish."""
    from uniroute import store

    with store.session(settings.db_path, operation, inputs=inputs, wait_seconds=settings.store_wait_seconds,
                       on_wait=say, atomic=atomic) as s:
        yield s


def reconcile_after(settings: Settings) -> None:
    """Bring what is derived from the store (MLflow, `published/current`) up to date after an operation."""
    from uniroute.pipeline.reconcile import reconcile

    with session(settings, "reconcile") as s:
        report = reconcile(s, settings.published_dir, *settings.tracking, cache_dir=settings.cache_dir)
    for finding in report.findings:
        if finding.status == "broken":
            say(f"warning: {finding.check}: {finding.detail} (see `uniroute doctor`)")


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
