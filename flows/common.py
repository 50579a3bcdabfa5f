"""What every flow does first: settings from the environment, and reconciling what is derived from the store."""

from __future__ import annotations

import contextlib
import logging
import traceback
from collections.abc import Iterator

from prefect import get_run_logger, task
from prefect.context import FlowRunContext, TaskRunContext
from prefect.logging.handlers import APILogHandler

from uniroute import operations
from uniroute.progress import PROGRESS
from uniroute.settings import Settings, apply_offline_environment, settings_from_environment


def flow_settings() -> Settings:
    """Settings from the environment (a bad UNIROUTE_ value: one line naming it), every download switch off."""
    settings = settings_from_environment()
    apply_offline_environment(settings)
    return settings


def flow_context(settings: Settings) -> operations.Context:
    """The operations' context inside a run: waits and the reconciliation's findings go to the run's log."""
    logger = get_run_logger()
    # A flow's reconciliation leaves models waiting for onboarding to the run their results' event triggers.
    return operations.Context.of(settings, on_wait=logger.info, on_warning=logger.warning, onboard_missing=False)


class _InRun(logging.Filter):
    """Only records made inside a flow or task run (a thread the library starts has no run to send them to)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return FlowRunContext.get() is not None or TaskRunContext.get() is not None


class _LibraryWarningsOnly(logging.Filter):
    """On the console, the library says only what a user must act on, and how far a long step is (a line every
    few seconds: `make run` sat a minute in silence while embedding); its other INFO lines are for the run's log."""

    def filter(self, record: logging.LogRecord) -> bool:
        return (record.levelno >= logging.WARNING or not record.name.startswith(LIBRARY_LOGGER)
                or getattr(record, PROGRESS, False))


LIBRARY_LOGGER = "uniroute"


@contextlib.contextmanager
def library_log_in_run() -> Iterator[None]:
    """For the flow's body: the library's INFO lines (what each build stage did and how long it took, periodic
    progress of long steps) go to this run's log in the Prefect UI, while the console stays as quiet as before.

    PREFECT_LOGGING_EXTRA_LOGGERS would attach the API handler too, but it is read when Prefect is imported (too
    late for a flow that sets it) and leaves the logger at WARNING; this is scoped to the run and restored after.
    """
    library = logging.getLogger(LIBRARY_LOGGER)
    to_api = APILogHandler(level=logging.INFO)
    to_api.addFilter(_InRun())
    quiet = _LibraryWarningsOnly()
    consoles = list(logging.getLogger().handlers)
    level = library.level
    library.addHandler(to_api)
    library.setLevel(logging.INFO)
    for handler in consoles:
        handler.addFilter(quiet)
    try:
        yield
    except BaseException as exc:
        release_frames(exc)
        raise
    finally:
        for handler in consoles:
            handler.removeFilter(quiet)
        library.setLevel(level)
        library.removeHandler(to_api)


def release_frames(exc: BaseException | None) -> None:
    """Drop the locals of the finished frames in a failing run's tracebacks (the printed traceback keeps its lines).

    They held the store's DuckDB connection and the values it returned; Prefect keeps the exception in the run's
    state to the end of the process, so the flow-run process exited with them alive and DuckDB's bindings
    (nanobind) printed some 80 "nanobind: leaked ..." lines under every failed run.
    """
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:  # the exception and the ones it was raised from or during
        seen.add(id(exc))
        traceback.clear_frames(exc.__traceback__)
        exc = exc.__cause__ or exc.__context__


@task(name="reconcile")
def reconcile_store(settings: Settings) -> list[str]:
    """Finish what a killed run left derived but undone (MLflow, `published/current`, stray files, the inbox)."""
    # Every finding is in the run's log (the library logs it at INFO); a repair or a broken invariant is also a
    # warning, on the console too (the context's on_warning).
    report = operations.reconciled(flow_context(settings))
    return [f.line() for f in report.findings if f.status != "ok"]
