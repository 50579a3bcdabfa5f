"""`make env`'s empty databases for new homes (Prefect's, MLflow's): each made once in a scratch folder by the program
that owns it, then copied in one consistent piece (SQLite's backup) into the environment's folder, under another name
first and linked into place (uniroute/environment.py `linked_into_place`). Nothing else has used it, so the copy holds
nothing a user made."""

from __future__ import annotations

import sqlite3
import tempfile
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

from uniroute.environment import linked_into_place


def sqlite_backup(database: Path, copy: Path) -> None:
    """database copied to copy in one consistent piece (SQLite's backup: its write-ahead log included)."""
    with closing(sqlite3.connect(database)) as source, closing(sqlite3.connect(copy)) as target:
        source.backup(target)


def template_made(target: Path, make: Callable[[Path], Path]) -> Path:
    """target, made unless it is there: make(scratch) makes the database in a scratch folder and returns its path."""
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"{target.stem}-") as scratch:
        database = make(Path(scratch))
        linked_into_place(target, lambda part: sqlite_backup(database, part))
    return target


def template_step(what: str, target: Path, make_template: Callable[[Path], Path]) -> None:
    """`make env`'s step: the template at target made unless it is there, in one line saying which and how long."""
    started = time.monotonic()
    if target.exists():
        print(f"{what}: {target} (already made)", flush=True)
        return
    make_template(target)
    print(f"{what}: {target} ({time.monotonic() - started:.0f} s)", flush=True)
