"""The one base of every error the library raises on purpose: the edges (CLI, flows) catch it once.

Each subclass keeps its builtin base too (ValueError, RuntimeError, LookupError), so code that caught the
builtin before still does.
"""

from __future__ import annotations

import errno
from pathlib import Path


class UnirouteError(Exception):
    """An error whose message is the whole story: the CLI prints it as one line, never a traceback."""


class DiskFull(UnirouteError, OSError):
    """A write that found no space left on its device: the file, what was kept unchanged, and what to do."""

    def __init__(self, path: Path | str, unchanged: str) -> None:
        self.path = Path(path)
        super().__init__(errno.ENOSPC, f"no space left on the device of {path} ({unchanged}): free space there and "
                         "run it again")

    def __str__(self) -> str:
        return str(self.strerror)


def is_disk_full(exc: BaseException | None) -> bool:
    """Whether exc (or what it was raised from) is the file system saying the device is full."""
    while exc is not None:
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        exc = exc.__cause__ or exc.__context__
    return False
