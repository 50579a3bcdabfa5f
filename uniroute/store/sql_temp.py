"""Where user SQL spills: a private folder per process under $UNIROUTE_HOME/tmp, removed when the query ends.

DuckDB spills a sort or join larger than its memory limit to its temp_directory, which defaults to the store's
own folder (a read-only store: next to it) or, for an in-memory database, `.tmp` in the caller's working
directory. Each `uniroute sql` gets `tmp/sql-<pid>` instead, capped in size, and removes it when it ends; a run
killed with SIGKILL cannot, so the next one (and `uniroute doctor`) removes the folders of processes that are
gone. A home that cannot be written gets no folder (None): the query runs without spilling.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

from uniroute.store.lock import READ_ONLY_ERRNOS

PREFIX = "sql-"


def process_alive(pid: int) -> bool:
    """Whether a process with this id exists (this process included): a leftover's owner is gone when it does not."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive
    return True


def stale_temp_dirs(tmp_root: Path) -> list[Path]:
    """Spill folders of `uniroute sql` runs whose process is gone (killed before it could remove them)."""
    if not Path(tmp_root).is_dir():
        return []
    out = []
    for entry in sorted(Path(tmp_root).glob(f"{PREFIX}*")):
        pid = entry.name.removeprefix(PREFIX)
        if pid.isdigit() and not process_alive(int(pid)):
            out.append(entry)
    return out


def remove_temp_dir(path: Path) -> None:
    """Remove a folder (or a file where one was expected), ignoring that it is already gone."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


@contextlib.contextmanager
def private_temp_dir(tmp_root: Path) -> Iterator[Path | None]:
    """tmp_root/sql-<pid>, created empty for this process and removed afterwards (leftovers of dead runs first);
    None when tmp_root cannot be written (a read-only home still answers queries, without spilling)."""
    path = Path(tmp_root) / f"{PREFIX}{os.getpid()}"
    try:
        for stale in stale_temp_dirs(tmp_root):
            remove_temp_dir(stale)
        remove_temp_dir(path)  # a folder of an earlier process with this pid
        path.mkdir(parents=True)
    except OSError as exc:
        if exc.errno not in READ_ONLY_ERRNOS:
            raise
        yield None
        return
    try:
        yield path
    finally:
        remove_temp_dir(path)
        with contextlib.suppress(OSError):  # left only while some query uses it: the home looks as before
            Path(tmp_root).rmdir()
