"""The writer lock: one state-changing operation at a time, and a name for whoever holds the store.

DuckDB locks its file per process, but a second process gets an immediate error that names nobody. A writer
first takes an exclusive `flock` on `<store>.lock` (waiting with a bounded back-off) and writes who it is into
that file, so a waiting writer can say "`build` (pid 123, since 12:00:03) holds the store" and a reader can
decide to answer from the published snapshot. The kernel drops the lock when the process dies, even on kill -9,
so a stale holder never blocks anyone: its note is simply overwritten by the next writer.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from uniroute.store.connection import StoreError

# Back-off between attempts: doubles from FIRST to LAST seconds.
FIRST_RETRY_SECONDS = 0.05
LAST_RETRY_SECONDS = 2.0
DEFAULT_WAIT_SECONDS = 120.0

_held_in_this_process = threading.local()


class StoreBusy(StoreError):
    """Another operation held the store for longer than this one was willing to wait."""


class ReadOnlyHome(StoreError):
    """The store's folder cannot be written (a read-only mount or no write permission): writers refuse in one line
    naming the folder, why, and what still works."""

    def __init__(self, folder: Path, operation: str, reason: str) -> None:
        self.folder, self.reason = Path(folder), reason
        super().__init__(
            f"{folder} is read-only ({reason}): `{operation}` writes there and changed nothing; make the folder "
            "writable (or work in a writable copy: cp -a), while `uniroute route`, `uniroute sql` and "
            "`uniroute doctor --check` answer from it as it is"
        )


# What a folder that cannot be written answers: a read-only file system, no permission (EPERM: some mounts).
READ_ONLY_ERRNOS = (errno.EROFS, errno.EACCES, errno.EPERM)


@dataclass(frozen=True)
class Holder:
    """Who holds (or last held) the writer lock."""

    operation: str
    pid: int
    started: str  # ISO time, UTC

    def line(self) -> str:
        return f"`{self.operation}` (pid {self.pid}, since {self.started[11:19]} UTC)"


def lock_path(db_path: Path) -> Path:
    """The lock file beside the store file."""
    return Path(db_path).with_name(Path(db_path).name + ".lock")


def _read_holder(path: Path) -> Holder | None:
    try:
        note = json.loads(path.read_text() or "null")
    except (OSError, ValueError):
        return None
    if not isinstance(note, dict):
        return None
    return Holder(str(note.get("operation", "?")), int(note.get("pid", 0)), str(note.get("started", "")))


def current_holder(db_path: Path) -> Holder | None:
    """The operation holding the writer lock now, or None when the store is free for writing."""
    path = lock_path(db_path)
    if not path.exists():
        return None
    fd = os.open(path, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read_holder(path) or Holder("an unnamed operation", 0, "")
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


class WriterLock:
    """An acquired writer lock; release() (or process death) frees it."""

    def __init__(self, fd: int, path: Path) -> None:
        self.fd, self.path = fd, path

    def release(self) -> None:
        if self.fd < 0:
            return
        try:
            # Emptied while still held: a lock file naming a finished operation read as if it still ran.
            os.ftruncate(self.fd, 0)
            fcntl.flock(self.fd, fcntl.LOCK_UN)
        finally:
            os.close(self.fd)
            self.fd = -1
            _held_in_this_process.held = False


def acquire_writer_lock(
    db_path: Path,
    operation: str,
    wait_seconds: float = DEFAULT_WAIT_SECONDS,
    on_wait: Callable[[str], None] | None = None,
) -> WriterLock:
    """Take the writer lock, waiting up to wait_seconds with a back-off; StoreBusy names the holder on timeout.

    on_wait receives one line, once, when the lock is held by someone else.
    """
    if getattr(_held_in_this_process, "held", False):
        raise StoreError(f"`{operation}` tried to open the store while this process already holds it (nested session)")
    path = lock_path(db_path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        if exc.errno in READ_ONLY_ERRNOS:  # the first write every writer makes: refuse before anything else
            raise ReadOnlyHome(path.parent, operation, exc.strerror or str(exc)) from None
        raise
    deadline = time.monotonic() + wait_seconds
    delay = FIRST_RETRY_SECONDS
    told = False
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                holder = _read_holder(path)
                who = holder.line() if holder else "another operation"
                if time.monotonic() >= deadline:
                    raise StoreBusy(
                        f"the store is busy: {who} holds it; gave up after {wait_seconds:.0f} s "
                        f"(`{operation}` changed nothing; run it again when that finishes)"
                    ) from None
                if not told and on_wait is not None:
                    on_wait(f"waiting for the store: {who} holds it (up to {wait_seconds:.0f} s)")
                    told = True
                time.sleep(min(delay, max(deadline - time.monotonic(), 0.0)))
                delay = min(delay * 2, LAST_RETRY_SECONDS)
    except BaseException:
        os.close(fd)
        raise
    note = {"operation": operation, "pid": os.getpid(), "started": datetime.now(UTC).isoformat()}
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps(note).encode(), 0)
    _held_in_this_process.held = True
    return WriterLock(fd, path)
