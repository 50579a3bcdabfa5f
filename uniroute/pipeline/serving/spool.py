"""The decision spool: append-only JSON-lines files under $UNIROUTE_HOME/spool/decisions that serving writes
without ever touching the store (so never waiting for its writer lock), and the inbox ingests.

A file is written as `NAME.jsonl.part` and renamed to `NAME.jsonl` once finished: at the end of a CLI call, or, in
a long-running server (the MLflow pyfunc), when it reaches max_bytes or max_seconds of age (checked on every
write and by a timer, so an idle server still finishes its file), and on SIGTERM or SIGINT (finish_on_stop). The
inbox takes finished files only, so a process killed mid-write loses at most the records of its unfinished `.part`
and never lands half a file.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
import uuid
import weakref
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any, cast

import orjson

from uniroute.faults import disk_full

log = logging.getLogger(__name__)

PART = ".part"
SUFFIX = ".jsonl"
DEFAULT_MAX_BYTES = 16 * 1024 * 1024
DEFAULT_MAX_SECONDS = 60.0
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
# How long a stop signal's handler waits for a write under way on another thread before it leaves that write to
# finish the file itself.
STOP_WAIT_SECONDS = 2.0


class DecisionSpool:
    """Appends decision records to the spool folder; thread-safe (a server answers requests on threads)."""

    def __init__(self, folder: Path, max_bytes: int = DEFAULT_MAX_BYTES, max_seconds: float = DEFAULT_MAX_SECONDS,
                 timer: bool = False) -> None:
        self.folder = Path(folder)
        self.max_bytes = int(max_bytes)
        self.max_seconds = float(max_seconds)
        self._lock = threading.Lock()
        self._handle: Any = None
        self._part: Path | None = None
        self._opened_at = 0.0
        self._size = 0
        self._timer = timer
        self._ticker: threading.Timer | None = None
        self._stopping = False  # a stop signal came: every later write finishes its file at once
        self.finished: list[Path] = []  # files renamed to their final name by this writer, oldest first

    def write(self, records: Iterable[dict[str, Any]]) -> None:
        """Append records (one JSON line each) to the open file, flushed to the OS; rotate when it is full or old."""
        # orjson: ten times json's speed, which keeps recording within serving's budget (benchmarks/speed/
        # recording.py); its UTF-8 output is split on "\n" only by every reader here (not str.splitlines).
        text = b"".join(orjson.dumps(r) + b"\n" for r in records)
        if not text:
            return
        with self._lock:
            if self._handle is None:
                self._open()
            try:
                disk_full("spool:write", cast(Path, self._part))
                self._handle.write(text)
                self._handle.flush()  # a killed process leaves whole lines in the .part (never ingested anyway)
            except OSError:
                self._drop_batch()
                raise
            self._size += len(text)
            if (self._stopping or self._size >= self.max_bytes
                    or time.monotonic() - self._opened_at >= self.max_seconds):
                self._finish()

    def close(self) -> None:
        """Finish the open file (rename it from .part), if any."""
        with self._lock:
            self._finish()
            if self._ticker is not None:
                self._ticker.cancel()
                self._ticker = None

    def stop(self) -> None:
        """A stop signal came: finish the open file now (or, when a write holds the lock past STOP_WAIT_SECONDS,
        leave that write to finish it), and finish every later write's file at once (a server finishing its last
        requests after the signal)."""
        self._stopping = True
        # Not `with`: the signal may have interrupted this very thread inside write(), holding the lock.
        if self._lock.acquire(timeout=STOP_WAIT_SECONDS):
            try:
                self._finish()
            finally:
                self._lock.release()

    def __enter__(self) -> DecisionSpool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _drop_batch(self) -> None:
        """Under the lock, after a failed write (a full disk): cut the file back to its whole earlier lines and
        finish it, or remove it when this batch was its first; never a half line or an empty file left behind."""
        with contextlib.suppress(OSError):
            self._handle.truncate(self._size)  # Python's buffer may hold part of the batch: it goes too
        if self._size:
            with contextlib.suppress(OSError):
                self._finish()
            return
        with contextlib.suppress(OSError):
            self._handle.close()
        with contextlib.suppress(OSError):
            os.unlink(cast(Path, self._part))
        self._handle, self._part = None, None

    def _open(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
        name = f"decisions-{stamp}-{os.getpid()}-{uuid.uuid4().hex[:8]}{SUFFIX}"
        self._part = self.folder / (name + PART)
        self._handle = open(self._part, "xb")  # noqa: SIM115 - kept open across writes
        self._opened_at = time.monotonic()
        self._size = 0
        if self._timer:
            self._ticker = threading.Timer(self.max_seconds, self._finish_if_old)
            self._ticker.daemon = True  # never keeps a stopping server alive
            self._ticker.start()

    def _finish_if_old(self) -> None:
        with self._lock:
            if self._handle is not None and time.monotonic() - self._opened_at >= self.max_seconds * 0.999:
                self._finish()

    def _finish(self) -> None:
        """Under the lock: close the open .part, make it durable and rename it to its final name."""
        if self._handle is None or self._part is None:
            return
        self._handle.flush()
        os.fsync(self._handle.fileno())
        self._handle.close()
        final = self._part.with_name(self._part.name[: -len(PART)])
        os.rename(self._part, final)
        self.finished.append(final)
        log.debug("decision spool: %s finished (%d bytes)", final.name, self._size)
        self._handle, self._part = None, None


_stoppable: weakref.WeakSet[DecisionSpool] = weakref.WeakSet()
_chained: dict[int, Any] = {}  # signal -> the handler in place before ours


def finish_on_stop(spool: DecisionSpool) -> bool:
    """Finish `spool`'s open file when the process gets SIGTERM or SIGINT, then let the signal do what it did before
    (a server's graceful shutdown, KeyboardInterrupt, or the default: the process ends, which skips atexit: uvicorn
    re-raises the signal after its shutdown). False when handlers cannot be set here (not the main thread): the
    file is then finished by close() or its timer only."""
    _stoppable.add(spool)
    if threading.current_thread() is not threading.main_thread():
        return False
    for sig in STOP_SIGNALS:
        current = signal.getsignal(sig)
        if current is not _on_stop:
            _chained[sig] = current
            signal.signal(sig, _on_stop)
    return True


def _on_stop(sig: int, frame: FrameType | None) -> None:
    for spool in list(_stoppable):
        try:
            spool.stop()
        except OSError:  # a full disk: the file stays .part, the signal still stops the process
            log.warning("decision spool: could not finish %s on signal %d", spool.folder, sig, exc_info=True)
    before = _chained.get(sig, signal.SIG_DFL)
    if callable(before):
        before(sig, frame)
    elif before == signal.SIG_DFL:
        signal.signal(sig, signal.SIG_DFL)  # the default action (end the process), as if we had not been here
        signal.raise_signal(sig)
