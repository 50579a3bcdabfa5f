"""Named crash points: where a test may stop the process as a kill -9 would, to prove recovery.

`crashpoint("publish:after-commit")` does nothing unless the environment variable UNIROUTE_CRASH_AT names
that point when it is reached; then the process sends itself SIGKILL, which is what kill -9 does (no cleanup, no
finally blocks, no flushed buffers), so the crash harness in tests/ can check that it died by the signal.

`disk_full("snapshot:write", path)` likewise raises the OSError a full disk gives (ENOSPC, naming path) when
UNIROUTE_DISK_FULL_AT names that point: a test fills no real disk to prove what a full one leaves behind.
"""

from __future__ import annotations

import errno
import os
import signal
from pathlib import Path

CRASH_ENV = "UNIROUTE_CRASH_AT"
CRASH_SIGNAL = signal.SIGKILL
CRASH_EXIT_CODE = 128 + CRASH_SIGNAL  # what a shell reports for a process killed by signal 9
DISK_FULL_ENV = "UNIROUTE_DISK_FULL_AT"


def crashpoint(name: str) -> None:
    """End the process here, as kill -9 would, when UNIROUTE_CRASH_AT names this point (test hook)."""
    if os.environ.get(CRASH_ENV) == name:
        os.kill(os.getpid(), CRASH_SIGNAL)
        os._exit(CRASH_EXIT_CODE)  # not reached: SIGKILL cannot be caught


def disk_full(name: str, path: Path | str) -> None:
    """Raise the OSError of a full device, naming path, when UNIROUTE_DISK_FULL_AT names this point (test hook)."""
    if os.environ.get(DISK_FULL_ENV) == name:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
