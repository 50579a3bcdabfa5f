"""Prefect retries a task only when it gave up waiting for the store (StoreBusy); any other failure fails once."""

from __future__ import annotations

import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.client.orchestration import get_client
from prefect.exceptions import ObjectNotFound

from flows.transient import RETRY_WHEN_STORE_BUSY, store_was_busy
from uniroute import store

HOLD = ("import sys, time; from pathlib import Path; from uniroute import store\n"
        "with store.session(Path(sys.argv[1]), 'build'):\n"
        "    print('holding', flush=True); time.sleep(float(sys.argv[2]))")
QUICK = {**RETRY_WHEN_STORE_BUSY, "retry_delay_seconds": [3, 3]}  # the real delays, shortened for the test


@contextmanager
def store_held_by_another_process(db_path: Path, seconds: float):
    """A real second process holding the store's writer lock (a session, as a build does) for `seconds`."""
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(db_path), str(seconds)], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        yield holder
    finally:
        holder.kill()
        holder.wait()


@task(name="write-to-the-store", cache_policy=NO_CACHE, **QUICK)
def write_to_the_store(db_path: Path) -> str:
    with store.session(db_path, "test", wait_seconds=0.5) as s:
        return s.op_id


@task(name="fail-on-bad-input", cache_policy=NO_CACHE, **QUICK)
def fail_on_bad_input() -> None:
    raise ValueError("score 1.5 outside [0, 1]")


def _run_count(state) -> int:
    """The task run's run count as the API recorded it, once the API has the run's final state (task runs reach the
    API through events, asynchronously: on a loaded machine the record can lag the returned state by seconds, and a
    record read early says run count 0 or the count before the retry)."""
    deadline = time.monotonic() + 30
    with get_client(sync_client=True) as client:
        while True:
            try:
                run = client.read_task_run(state.state_details.task_run_id)
                if run.state_type == state.type and run.run_count > 0:
                    return run.run_count
            except ObjectNotFound:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"the API never recorded the task run's final state {state.type}")
            time.sleep(0.2)


def test_a_task_that_gave_up_on_a_busy_store_is_retried(prefect_harness, db_path):
    with store.opened(db_path):
        pass
    with store_held_by_another_process(db_path, 120) as holder:
        verdicts = []

        def decide_then_let_go(task, task_run, state) -> bool:
            """The real condition; once it has said "retry", the other process finishes (as a build would)."""
            verdicts.append(store_was_busy(task, task_run, state))
            holder.kill()
            holder.wait()
            return verdicts[-1]

        state = write_to_the_store.with_options(retry_condition_fn=decide_then_let_go)(db_path, return_state=True)
    assert verdicts == [True]  # the first attempt gave up on the busy store, and that is transient
    assert state.is_completed(), state
    assert _run_count(state) == 2


def test_any_other_failure_is_not_retried(prefect_harness):
    state = fail_on_bad_input(return_state=True)
    assert state.is_failed() and _run_count(state) == 1
