"""Retries for the one failure that passes by itself: DuckDB's write lock held by another flow run.

DuckDB lets one process write the store at a time (STACK.md). The served deployments (inbox every minute,
publishing every 15 minutes, the nightly build, onboarding on events) can collide on it; the other run
lets go within seconds or minutes. Every other failure (bad data, no champion, a bug) fails at once.
"""

from __future__ import annotations

import duckdb


def _is_lock_conflict(exc: BaseException | None) -> bool:
    """Whether the exception, or one it was raised from, is DuckDB refusing a lock another process holds."""
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, duckdb.IOException) and "lock" in str(exc).lower():
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


def store_was_busy(task, task_run, state) -> bool:
    """Prefect retry condition: retry only when the task failed on the store's write lock."""
    try:
        state.result()
    except Exception as exc:  # the task's own failure, re-raised by Prefect: inspect it, never swallow it
        return _is_lock_conflict(exc)
    return False


# Waits that outlast an inbox run or a publish (seconds) and most of a build's write steps (a minute).
RETRY_WHEN_STORE_BUSY = {"retries": 3, "retry_delay_seconds": [5, 20, 60], "retry_condition_fn": store_was_busy}
