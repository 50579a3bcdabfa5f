"""The Typer application, and what every command shares: settings from the environment, one-line errors, output."""

from __future__ import annotations

import importlib
import inspect
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
import typer.main
import typer.models
from typer._click.utils import make_default_short_help
from typer.core import TyperGroup

from uniroute.errors import UnirouteError

if TYPE_CHECKING:
    import pandas as pd
    from typer._click import Command, HelpFormatter  # Typer's own copy of click, whose types its groups use
    from typer._click import Context as ClickContext

    from uniroute.operations.context import Context as OperationsContext
    from uniroute.settings import Settings

# This module and every command module load when the app starts (`--help` lists every command): each imports
# only Typer at its top and what a command needs inside that command (pandas, the store, the settings' pydantic,
# the operations), so `uniroute --help` answers at once (tests/cli/test_startup.py keeps it so).

# Which module registers each command: a command loads its own module only, so `uniroute route` does not pay
# for the evaluation harness or the ingest readers; --help (and any name not listed) loads them all.
COMMAND_MODULES = {
    "ingest": "intake", "inbox": "intake", "synth": "intake", "models": "intake",
    "build": "build",
    "onboard": "pool", "onboarding-set": "pool", "retire": "pool", "rollback": "pool",
    "route": "serving", "publish": "serving", "sql": "serving", "status": "serving",
    "replay": "traffic",
    "doctor": "upkeep",
    "gateway": "gateway",
    "evaluate": "evaluation", "report": "evaluation",
    "arena-battles": "paper", "annotate": "paper",
}
# One module per wing of the pipeline (build, pool, serving, traffic), data coming in (intake) and upkeep, then the
# paper's experiments; --help lists the commands in this order.
MODULE_ORDER = ("intake", "build", "pool", "serving", "gateway", "traffic", "upkeep", "evaluation", "paper")


class _CommandsOnDemand(TyperGroup):
    """The app's command group, importing a command's module and building its click command when it is asked for;
    the list of commands (--help) is written from the registered functions' docstrings without building any."""

    def get_command(self, ctx: ClickContext, cmd_name: str) -> Command | None:
        if cmd_name not in self.commands or cmd_name in app_groups():
            _load(*([COMMAND_MODULES[cmd_name]] if cmd_name in COMMAND_MODULES else MODULE_ORDER))
            self._convert(cmd_name)
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: ClickContext) -> list[str]:
        _load(*MODULE_ORDER)
        return list(_registered())

    def format_commands(self, ctx: ClickContext, formatter: HelpFormatter) -> None:
        """The commands with the first sentence of their help, as click prints them."""
        _load(*MODULE_ORDER)
        shown = {name: info for name, info in _registered().items() if info.hidden is not True}
        if not shown:
            return
        limit = formatter.width - 6 - max(len(name) for name in shown)
        with formatter.section("Commands"):
            formatter.write_dl([(name, make_default_short_help(_help_of(info), limit)) for name, info in shown.items()])

    def _convert(self, name: str) -> None:
        """The click command of one registered command or group (a group is rebuilt: its commands may live in a
        module loaded since); building one reads its parameters' annotations, which is slow for twenty."""
        info = _registered().get(name)
        options: dict[str, Any] = {"pretty_exceptions_short": app.pretty_exceptions_short,
                                   "rich_markup_mode": app.rich_markup_mode}
        if isinstance(info, typer.models.CommandInfo):
            self.commands[name] = typer.main.get_command_from_info(info, **options)
        elif info is not None:
            self.commands[name] = typer.main.get_group_from_info(info, suggest_commands=app.suggest_commands,
                                                                 **options)


def _registered() -> dict[str, typer.models.CommandInfo | typer.models.TyperInfo]:
    """The app's commands by name, in registration order, groups last."""
    out: dict[str, typer.models.CommandInfo | typer.models.TyperInfo] = {}
    for info in app.registered_commands:
        out[info.name or typer.main.get_command_name(getattr(info.callback, "__name__", ""))] = info
    for group in app.registered_groups:
        out[str(group.name)] = group
    return out


def _help_of(info: typer.models.CommandInfo | typer.models.TyperInfo) -> str:
    """A command's help as Typer shows it: its short help, its help, else the docstring of its function."""
    candidates = [info.short_help, info.help]
    if isinstance(info, typer.models.TyperInfo) and info.typer_instance is not None:
        candidates += [info.typer_instance.info.short_help, info.typer_instance.info.help]
    for text in candidates:
        if isinstance(text, str):
            return inspect.cleandoc(text)
    callback = getattr(info, "callback", None)
    return (inspect.getdoc(callback) or "") if callback is not None else ""


def _load(*modules: str) -> None:
    for module in modules:
        importlib.import_module(f"uniroute.cli.{module}")


def app_groups() -> set[str]:
    """The names of the app's command groups (their commands register from other modules)."""
    return {str(g.name) for g in app.registered_groups}


app = typer.Typer(
    cls=_CommandsOnDemand,
    help=(
        "Route each prompt to the right LLM in a pool that keeps changing (UniRoute). "
        "All state lives under $UNIROUTE_HOME (default ./.uniroute)."
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,  # click's plain help: Rich's formatter alone doubles the start-up of `--help`
)
models_app = typer.Typer(help="Inspect and edit the model registry.", no_args_is_help=True, rich_markup_mode=None)
app.add_typer(models_app, name="models")

JsonFlag = Annotated[bool, typer.Option("--json", help="Print the result as JSON on stdout.")]


def settings_from_env() -> Settings:
    """Settings from the UNIROUTE_ variables (a bad value: one line naming it), every download switch off."""
    from uniroute.settings import SettingsError, apply_offline_environment, settings_from_environment

    try:
        settings = settings_from_environment()
    except SettingsError as exc:
        fail(str(exc))
    apply_offline_environment(settings)
    return settings


def context(settings: Settings, mlflow_after: bool = False) -> OperationsContext:
    """The operations' context: waits and the reconciliation's findings as lines on stderr. mlflow_after: the
    operation may leave its MLflow logging to a detached follow-up once it has answered, as
    UNIROUTE_MLFLOW_BACKGROUND allows (operations/mlflow_after.py)."""
    from dataclasses import replace

    from uniroute.operations.context import Context as OperationsContext

    ctx = OperationsContext.of(settings, on_wait=say, on_warning=warn)
    if mlflow_after and settings.mlflow_background:
        ctx = replace(ctx, mlflow_after_log=settings.mlflow_sync_log)
    return ctx


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


def warn(line: str) -> None:
    """An operation's finding that needs a look, on stderr."""
    say(f"warning: {line} (see `uniroute doctor`)")


@contextmanager
def one_line_errors(*builtins: type[OSError]) -> Iterator[None]:
    """Turn the library's errors (every one is a UnirouteError) into one line on stderr and exit code 1; `builtins`
    adds the file system's own errors where a command writes files the library cannot check ahead."""
    try:
        yield
    except (UnirouteError, *builtins) as exc:  # type: ignore[misc]  # mypy cannot read a starred tuple here
        fail(str(exc))


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


def print_frame(frame: pd.DataFrame, as_json: bool) -> None:
    from uniroute.frame_output import render

    typer.echo(render(frame, "json" if as_json else "table"))
