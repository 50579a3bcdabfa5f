"""MLflow after the answer: an operation that returns before MLflow has logged what it recorded hands that logging to
a detached follow-up process, which runs the reconciliation MLflow included (docs/decisions/0410).

Importing MLflow and logging a router model cost ten of `uniroute onboard`'s twelve seconds, while the store had
decided everything in two: the store decides, MLflow follows (docs/decisions/0004), so the user gets the answer
first. Until the follow-up has logged it, the store says what waits (`mlflow_pending_routers`,
`mlflow_pending_publications`): `uniroute status` and `uniroute doctor --check` show it, and if the follow-up dies,
the next operation's reconciliation or `uniroute doctor` logs it instead.

Run as `python -m uniroute.operations.mlflow_after`, it builds its context from the environment's settings, as the
CLI that started it did.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from uniroute.operations.context import Context
from uniroute.operations.upkeep import reconciled


@dataclass(frozen=True)
class MlflowFollowUp:
    """A follow-up process logging to MLflow: where MLflow is and where its output goes."""

    pid: int
    tracking_uri: str
    log_path: Path

    def line(self) -> str:
        from uniroute.pipeline.tracking.client import EXPERIMENT, REGISTERED_NAME

        return (f"MLflow: logging in the background (pid {self.pid}) to {self.tracking_uri}, "
                f"experiment {EXPERIMENT!r}, model {REGISTERED_NAME!r}; output in {self.log_path}; "
                "`uniroute status` shows what still waits")


def start_mlflow_sync(ctx: Context) -> MlflowFollowUp | None:
    """Start the detached follow-up that logs to MLflow what the store recorded (None: MLflow is off). It outlives
    the caller (its own session: a Ctrl-C at the terminal does not stop it) and appends its output to the log."""
    if ctx.tracking_uri is None or ctx.mlflow_after_log is None:
        return None
    log_path = ctx.mlflow_after_log
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as out:
        out.write(f"\n== {datetime.now(UTC).isoformat(timespec='seconds')} follow-up of pid {os.getpid()}\n".encode())
        out.flush()
        child = subprocess.Popen([sys.executable, "-m", __name__], stdin=subprocess.DEVNULL, stdout=out,
                                 stderr=subprocess.STDOUT, start_new_session=True, close_fds=True)
    return MlflowFollowUp(child.pid, ctx.tracking_uri, log_path)


def _warm_mlflow(ctx: Context) -> None:
    """Import MLflow and open its tracking store before the reconciliation takes the store's writer lock: those
    seconds then never make a `uniroute route` answer from the published snapshot instead of the store."""
    from uniroute.pipeline.tracking.client import tracking_store

    try:
        with tracking_store(ctx.tracking_uri) as client:
            client.search_experiments(max_results=1)
    except Exception as exc:  # noqa: BLE001  # only a warm-up: the reconciliation meets the same fault and reports it
        print(f"warm-up: {type(exc).__name__}: {exc}", flush=True)


def main() -> int:
    from uniroute.settings import apply_offline_environment, settings_from_environment

    settings = settings_from_environment()
    apply_offline_environment(settings)
    ctx = Context.of(settings, on_warning=lambda line: print(f"warning: {line}", flush=True))
    _warm_mlflow(ctx)
    report = reconciled(ctx)
    for line in report.lines():
        print(line, flush=True)
    return 0 if report.healthy else 1


if __name__ == "__main__":
    sys.exit(main())
