"""Named crash points: where a test may stop the process as a kill -9 would, to prove recovery.

`crashpoint("publish:after-commit")` does nothing unless the environment variable UNIROUTE_CRASH_AT names
that point when it is reached; then the process ends at once with os._exit (no cleanup, no finally blocks, no
flushed buffers), which is what the crash harness in tests/ needs and what kill -9 does.
"""

from __future__ import annotations

import os

CRASH_ENV = "UNIROUTE_CRASH_AT"
CRASH_EXIT_CODE = 137  # what a shell reports for a process killed by signal 9


def crashpoint(name: str) -> None:
    """End the process here, as kill -9 would, when UNIROUTE_CRASH_AT names this point (test hook)."""
    if os.environ.get(CRASH_ENV) == name:
        os._exit(CRASH_EXIT_CODE)
