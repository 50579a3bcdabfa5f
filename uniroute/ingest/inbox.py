"""The inbox: complete files dropped into $UNIROUTE_HOME/inbox are ingested, then moved to done/ or failed/.

Convention for writers: write `NAME.part` (or .partial, .tmp) and rename it to `NAME` when complete; a file
copied in place is taken once its size and modification time have stood still for SETTLE_SECONDS. Only regular
files directly inside the inbox are read: links, folders and devices are moved to failed/ unread.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from uniroute import store
from uniroute.faults import crashpoint
from uniroute.ingest.load import IngestSummary, ingest_file
from uniroute.ingest.staging import (
    IngestError,
)

log = logging.getLogger(__name__)

@dataclass(frozen=True)
class InboxOutcome:
    """What happened to one inbox file: moved to done/ (ingested or skipped) or failed/ (with the reason)."""

    name: str
    status: str  # 'ingested', 'skipped' or 'failed'
    moved_to: str
    summary: IngestSummary | None
    error: str | None

    @property
    def landed_models(self) -> tuple[str, ...]:
        return self.summary.landed_models if self.summary is not None else ()

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready fields, with the summary's landed_models at the top level."""
        return {
            "name": self.name,
            "status": self.status,
            "moved_to": self.moved_to,
            "error": self.error,
            "landed_models": list(self.landed_models),
            "summary": self.summary.as_dict() if self.summary is not None else None,
        }


# Files still being written carry one of these suffixes and are renamed to their final name when complete.
PARTIAL_SUFFIXES = (".part", ".partial", ".tmp", ".crdownload")
REASON_SUFFIX = ".reason.txt"
NAME_BYTES = 255  # the longest file name most file systems take
PROCESSING = ".processing"  # files claimed by a run: renamed here first, moved on only after their commit
FOLDERS = ("done", "failed", PROCESSING)
INBOX_LOCK = ".inbox.lock"  # hidden: inbox_files never lists it
# A file copied into the inbox in place (no .part rename) counts as complete once its size and modification
# time have not changed for this long.
SETTLE_SECONDS = 2.0
# Errors a file's content can raise past its reader's checks (a value DuckDB cannot convert or store, text that
# is not UTF-8): the file is refused, never retried. Lock, disk and interrupt errors are not among them.
CONTENT_ERRORS = (duckdb.DataError, duckdb.IntegrityError, duckdb.InvalidInputException, ValueError,
                  ArithmeticError, LookupError, RecursionError)


def inbox_files(inbox_dir: Path) -> list[Path]:
    """The entries waiting in the inbox (not hidden, not partial, not its own folders), by name.

    Symbolic links and other non-regular entries are listed too, so that they are refused with a reason
    instead of being ignored forever; nothing here follows a link.
    """
    entries = []
    with os.scandir(inbox_dir) as listing:
        for entry in listing:
            if entry.name.startswith(".") or entry.name.endswith(PARTIAL_SUFFIXES) or entry.name in FOLDERS:
                continue
            entries.append(Path(entry.path))
    return sorted(entries)


def _not_a_regular_file(path: Path) -> str | None:
    """Why an inbox entry cannot be ingested as it is (without following it), or None for a regular file."""
    mode = path.lstat().st_mode
    if stat.S_ISLNK(mode):
        return "a symbolic link; the inbox takes regular files only (copy the file itself, write NAME.part, rename)"
    if stat.S_ISDIR(mode):
        return "a directory; the inbox takes regular files only"
    if not stat.S_ISREG(mode):
        return "not a regular file (a device, socket or pipe); the inbox takes regular files only"
    return None


def _settled(path: Path, settle_seconds: float) -> bool:
    """Whether a file's size and modification time stay unchanged for settle_seconds (waiting if it is newer)."""
    return path in _settled_files([path], settle_seconds)[0]


def _settled_files(paths: list[Path], settle_seconds: float) -> tuple[list[Path], list[Path]]:
    """(settled, still being written) of regular files: those modified within settle_seconds are looked at again
    after one wait for the youngest (not one wait per file), and taken when their size and modification time held."""
    stats = {}
    for path in paths:
        with contextlib.suppress(FileNotFoundError):  # renamed away meanwhile (a writer's own rename): not ours
            stats[path] = path.lstat()
    now = time.time()
    young = {p: s for p, s in stats.items() if now - s.st_mtime < settle_seconds}
    if young:
        time.sleep(max(settle_seconds - (now - s.st_mtime) for s in young.values()))
    growing = []
    for path, first in young.items():
        try:
            second = path.lstat()
        except FileNotFoundError:
            growing.append(path)
            continue
        if (first.st_size, first.st_mtime_ns) != (second.st_size, second.st_mtime_ns):
            growing.append(path)
    return [p for p in stats if p not in growing], growing


def still_being_written(folder: Path, settle_seconds: float = SETTLE_SECONDS) -> list[str]:
    """Names of the files waiting in an inbox folder that were modified within settle_seconds (no wait): what the
    next run leaves for later if they are still growing (`status` names them)."""
    if not folder.is_dir():
        return []
    now = time.time()
    out = []
    for path in inbox_files(folder):
        with contextlib.suppress(OSError):
            mode = path.lstat()
            if stat.S_ISREG(mode.st_mode) and now - mode.st_mtime < settle_seconds:
                out.append(path.name)
    return out


def _moved(path: Path, folder: Path, name: str | None = None) -> Path:
    """Rename a file into a folder without overwriting an earlier file of the same name; the new path."""
    folder.mkdir(parents=True, exist_ok=True)
    name = name or path.name
    target = folder / name
    stem, suffix = os.path.splitext(name)
    counter = 1
    while target.exists() or target.is_symlink():
        target = folder / f"{stem}.{counter}{suffix}"
        counter += 1
    os.rename(path, target)  # the entry itself: a link is moved, never followed
    return target


def _failed_name(name: str) -> str:
    """The name a failed file keeps: its own, shortened (with a digest of it) when the reason file's name beside it
    would pass the file system's limit on a name."""
    room = NAME_BYTES - len(REASON_SUFFIX) - 12  # the reason suffix, and a counter _moved may add
    if len(os.fsencode(name)) <= room:
        return name
    stem, suffix = os.path.splitext(name)
    digest = hashlib.sha256(os.fsencode(name)).hexdigest()[:12]
    keep = os.fsencode(stem)[: room - len(digest) - 1 - len(os.fsencode(suffix))].decode("utf-8", "ignore")
    return f"{keep}-{digest}{suffix}"


def _failed(path: Path, inbox_dir: Path, name: str, reason: str) -> InboxOutcome:
    """Move an entry to failed/ with a reason file that quotes only the inbox's own words and contents."""
    target = _moved(path, inbox_dir / "failed", _failed_name(name))
    reason = reason.replace(str(path), name)
    target.with_name(target.name + REASON_SUFFIX).write_text(f"{reason}\n")
    log.info("%s -> %s: %s", name, target, reason)  # the caller reports the outcome (CLI line, flow log)
    return InboxOutcome(name, "failed", str(target), None, reason)


def _check_folders(inbox_dir: Path) -> None:
    """IngestError naming an inbox folder that is something else (a file, a link), before any file is claimed."""
    for name in FOLDERS:
        path = inbox_dir / name
        if (path.exists() or path.is_symlink()) and (path.is_symlink() or not path.is_dir()):
            what = "a symbolic link" if path.is_symlink() else "not a folder"
            raise IngestError(f"{path} is {what}, but the inbox keeps its {name} files in a folder there: move it "
                              f"aside (mv {path} {path}.moved) and run `uniroute inbox` again")


def process_inbox(
    db_path: Path,
    inbox_dir: Path,
    split: str | None = None,
    progress: bool = False,
    settle_seconds: float = SETTLE_SECONDS,
    on_wait: Callable[[str], None] | None = None,
    only: str | None = None,
) -> list[InboxOutcome]:
    """Ingest every complete file waiting in the inbox, one store session each.

    Each file is first claimed (renamed into .processing/), ingested and committed, and only then moved to
    done/; a file that cannot be ingested goes to failed/ with the reason beside it. A run killed half-way
    leaves claimed files in .processing/, which the next run picks up first (ingesting is idempotent). `only`:
    the one format this folder takes (the decision spool), decided by content (ingest_file).
    """
    inbox_dir = Path(inbox_dir)
    inbox_dir.mkdir(parents=True, exist_ok=True)
    _check_folders(inbox_dir)
    # One run at a time: a second run would claim the files the first is processing (and crash on a file the
    # first had moved). It leaves at once with nothing done; the running one takes every complete file.
    lock = os.open(inbox_dir / INBOX_LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.info("another inbox run is processing %s; this one leaves it the files", inbox_dir)
            return []
        return _process_claimed(db_path, inbox_dir, split, progress, settle_seconds, on_wait, only)
    finally:
        os.close(lock)  # closing releases the lock


def _process_claimed(db_path: Path, inbox_dir: Path, split: str | None, progress: bool, settle_seconds: float,
                     on_wait: Callable[[str], None] | None, only: str | None) -> list[InboxOutcome]:
    """process_inbox's work, under the inbox lock."""
    processing = inbox_dir / PROCESSING
    processing.mkdir(exist_ok=True)
    claimed = sorted(p for p in processing.iterdir())  # left by a killed run
    outcomes: list[InboxOutcome] = []
    regular = []
    for path in inbox_files(inbox_dir):
        reason = _not_a_regular_file(path)
        if reason is not None:
            outcomes.append(_failed(path, inbox_dir, path.name, reason))
        else:
            regular.append(path)
    settled, growing = _settled_files(regular, settle_seconds)
    for path in growing:
        log.info("%s: still being written; left for the next run", path.name)
    claimed += [_moved(path, processing) for path in settled]
    for path in claimed:
        name = path.name
        reason = _not_a_regular_file(path)
        if reason is not None:
            outcomes.append(_failed(path, inbox_dir, name, reason))
            continue
        try:
            with store.session(db_path, "ingest", inputs=f"inbox/{name}", on_wait=on_wait) as s:
                summary = ingest_file(s.con, path, split=split, progress=progress, source=str(inbox_dir / name),
                                      only=only)
                s.detail = summary.line()
        except IngestError as exc:
            outcomes.append(_failed(path, inbox_dir, name, str(exc)))
            continue
        except CONTENT_ERRORS as exc:
            # What a file holds must never stop the run, nor every later one (it would stay in .processing/ and
            # be retried first): the file goes to failed/ with the error, the rest of the inbox goes on.
            log.warning("%s: could not be ingested", name, exc_info=True)
            first = str(exc).splitlines()[0] if str(exc) else ""
            outcomes.append(_failed(path, inbox_dir, name, f"could not be ingested ({type(exc).__name__}: "
                                                           f"{first})"))
            continue
        crashpoint("inbox:committed")
        if summary.status == "ingested" and summary.rows_accepted == 0 and summary.rows_quarantined:
            # Nothing usable landed: done/ would say all is well. Its quarantine rows stay for the reasons.
            table = "decision_quarantine" if summary.unit == "decisions" else "quarantine"
            outcomes.append(_failed(path, inbox_dir, name, f"no row accepted: {summary.rows_quarantined:,} rows "
                                    f"quarantined ({summary.first_problem}); see the {table} table"))
            continue
        target = _moved(path, inbox_dir / "done", name)
        outcomes.append(InboxOutcome(name, summary.status, str(target), summary, None))
    with contextlib.suppress(OSError):  # only when empty: an interrupted run's files stay for the next one
        processing.rmdir()
    return outcomes
