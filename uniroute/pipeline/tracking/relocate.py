"""A tracking store that moved with its UNIROUTE_HOME: its recorded artifact URIs rewritten to the new home.

MLflow records absolute artifact URIs (the experiment's artifact_location, each run's artifact_uri, each logged
model's and model version's location) in mlflow.db. A copied or moved home (`cp -a`, a restored backup) keeps
those pointing at the old folder: the next sync would log runs into it, and once it is gone the registered model
no longer loads. So before any sync, and in `uniroute doctor`, the recorded root is compared with this home's
`mlartifacts`: when they differ but the artifacts the store records are here under the same relative paths, the
home moved and every recorded URI under the old root is rewritten (one SQLite transaction); otherwise the store
belongs to another home, which is a one-line error saying how to start a fresh one.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from uniroute.store import StoreError

EXPERIMENT = "uniroute"
# (table, column) where MLflow 3 records absolute artifact URIs; columns a store's schema lacks are skipped.
URI_COLUMNS = (
    ("experiments", "artifact_location"),
    ("runs", "artifact_uri"),
    ("logged_models", "artifact_location"),
    ("model_versions", "storage_location"),
    ("model_versions", "source"),
)


class DamagedTrackingStore(StoreError):
    """mlflow.db is not an SQLite database, or is cut short."""


class ForeignTrackingStore(StoreError):
    """mlflow.db records artifacts outside this home that this home does not hold: it belongs to another home."""


@dataclass(frozen=True)
class Location:
    """Where the tracking store says its artifacts are (old) and where this home keeps them (new)."""

    db_file: Path  # mlflow.db
    old: str  # file:// URI recorded in mlflow.db
    new: str  # file:// URI of this home's artifact root
    moved: bool  # the artifacts it records are under new, at the same relative paths

    def line(self) -> str:
        return f"the MLflow store's artifacts moved from {self.old} to {self.new}"

    def refusal(self) -> str:
        """The one line for a store of another home, with the repair."""
        return (f"{self.db_file} keeps its artifacts at {self.old}, and this home's {self.new} does not hold them: "
                f"it belongs to another UNIROUTE_HOME; move it aside (mv {self.db_file} {self.db_file}.foreign) "
                "and `uniroute doctor` logs this store's routers to a fresh one")


def tracking_store_file(tracking_uri: str) -> Path | None:
    """The database file of a sqlite:/// tracking URI (None for any other kind of store)."""
    prefix = "sqlite:///"
    return Path(tracking_uri[len(prefix):]) if tracking_uri.startswith(prefix) else None


def _local_path(uri: str) -> Path | None:
    parsed = urlparse(uri)
    return Path(unquote(parsed.path)) if parsed.scheme in ("file", "") else None


def _has_column(con: sqlite3.Connection, table: str, column: str) -> bool:
    return any(row[1] == column for row in con.execute(f'pragma table_info("{table}")'))


def _recorded_below(con: sqlite3.Connection, old: str) -> list[str]:
    """Every URI recorded under old (runs, logged models, versions): the relative paths a moved home must hold."""
    out = []
    for table, column in URI_COLUMNS[1:]:
        if _has_column(con, table, column):
            out += [r[0] for r in con.execute(
                f'select "{column}" from "{table}" where "{column}" like ? escape \'\\\'',
                (_like_prefix(old),))]
    return out


def _like_prefix(uri: str) -> str:
    """A LIKE pattern for URIs below uri (its own % and _ escaped)."""
    escaped = uri.rstrip("/").replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped + "/%"


def tracking_location(tracking_uri: str, artifact_root: Path) -> Location | None:
    """None when the tracking store's artifacts are where this home keeps them (or nothing is recorded yet);
    else the recorded and the wanted root, and whether the artifacts moved here with the home."""
    db_file = tracking_store_file(tracking_uri)
    if db_file is None or not db_file.exists():
        return None
    new = Path(artifact_root).resolve().as_uri()
    con = sqlite3.connect(f"file:{db_file}?mode=ro", uri=True)
    try:
        if not _has_column(con, "experiments", "artifact_location"):
            return None  # an empty file, or MLflow has not created its tables yet
        row = con.execute("select artifact_location from experiments where name = ?", (EXPERIMENT,)).fetchone()
        if row is None or row[0].rstrip("/") == new.rstrip("/"):
            return None
        old = row[0].rstrip("/")
        old_root, new_root = _local_path(old), Path(artifact_root).resolve()
        recorded = _recorded_below(con, old)
    except sqlite3.DatabaseError as exc:  # not SQLite, or cut short: MLflow would fail on it with a traceback
        raise DamagedTrackingStore(
            f"{db_file} is not a readable MLflow store ({exc}): move it aside (mv {db_file} {db_file}.damaged) and "
            "`uniroute doctor` logs every router version and publication the store records to a fresh one") from exc
    finally:
        con.close()
    moved = old_root is not None and old_root.name == new_root.name and all(
        (new_root / uri[len(old) + 1:]).exists() for uri in recorded)
    return Location(db_file, old, new.rstrip("/"), moved)


def relocate_tracking_store(tracking_uri: str, artifact_root: Path) -> str | None:
    """Rewrite the recorded artifact URIs to this home when it moved (the line saying so, else None);
    ForeignTrackingStore when mlflow.db belongs to another home."""
    location = tracking_location(tracking_uri, artifact_root)
    if location is None:
        return None
    if not location.moved:
        raise ForeignTrackingStore(location.refusal())
    con = sqlite3.connect(str(location.db_file))
    try:
        with con:  # one transaction: every URI rewritten, or none
            for table, column in URI_COLUMNS:
                if _has_column(con, table, column):
                    con.execute(
                        f'update "{table}" set "{column}" = ? || substr("{column}", ?) '
                        f'where "{column}" = ? or "{column}" like ? escape \'\\\'',
                        (location.new, len(location.old) + 1, location.old, _like_prefix(location.old)))
    finally:
        con.close()
    return location.line()
