"""Retries for the one failure that passes by itself: another operation holding the store for too long.

A session waits for the store's writer lock (UNIROUTE_STORE_WAIT_SECONDS) and then gives up with StoreBusy,
changing nothing. A nightly build holds the store for minutes, so a run that gave up can succeed a little
later. Every other failure (bad data, no champion, a bug) fails at once. Scheduled flows (inbox, publish)
need no retry: their next run comes within minutes.
"""

from __future__ import annotations

from typing import Any

from uniroute.store import StoreBusy


def store_was_busy(task, task_run, state) -> bool:
    """Prefect retry condition: retry only when the task gave up waiting for the store."""
    try:
        state.result()
    except StoreBusy:
        return True
    except Exception:  # any other failure of the task: not transient, so no retry (Prefect reports it)
        return False
    return False


# With the session's own wait (120 s by default) between attempts, this covers a store held for about 12 minutes.
RETRY_WHEN_STORE_BUSY: dict[str, Any] = {"retries": 2, "retry_delay_seconds": [60, 300],
                                         "retry_condition_fn": store_was_busy}
