"""What a killed writer leaves next to the store: DuckDB's spill files in `<store>.tmp/`.

A writer (an ingest of a large file, a build) runs under a memory limit; past it DuckDB spills its temp tables and
uncommitted rows to its temp directory, by default `uniroute.duckdb.tmp` beside the store (about 2.5x a large file
during an ingest). DuckDB removes its own files when the connection closes, but a process killed with SIGKILL
cannot, and a later connection does not remove another process's files: they stayed, unnoticed, for ever. Each file
names the process that made it (`duckdb_temp_<pid>_...`), so the files of a process that is gone are leftovers.

The write-ahead log (`uniroute.duckdb.wal`) is not a leftover: it holds committed changes only (an uncommitted
transaction writes nothing to it), and the next connection replays it. It is never removed here.
"""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

from uniroute.store.sql_temp import process_alive

_OWNED = re.compile(r"duckdb_temp_(\d+)_")


def spill_dir(db_path: Path) -> Path:
    """DuckDB's default temp directory for a store file."""
    return Path(f"{db_path}.tmp")


def stale_spill_files(db_path: Path) -> list[Path]:
    """Spill files beside the store of DuckDB processes that are gone (killed before they could remove them)."""
    folder = spill_dir(db_path)
    if not folder.is_dir() or folder.is_symlink():
        return []
    out = []
    for entry in sorted(folder.iterdir()):
        owner = _OWNED.match(entry.name)
        if owner and entry.is_file() and not process_alive(int(owner.group(1))):
            out.append(entry)
    return out


def spilled_bytes(files: list[Path]) -> int:
    """Disk space the files take (allocated blocks: spill files are sparse)."""
    total = 0
    for path in files:
        with contextlib.suppress(OSError):
            total += path.stat().st_blocks * 512
    return total


def remove_spill_files(db_path: Path, files: list[Path]) -> None:
    """Remove the given spill files, and the folder once nothing is left in it (the home looks as before)."""
    for path in files:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    with contextlib.suppress(OSError):  # not empty: a running process still spills there
        spill_dir(db_path).rmdir()
