"""`uniroute status`: the state of the pool on one screen — champion, pool, current publication, the last build and
onboarding, the inbox — read without ever waiting for a writer (the published snapshot answers while one runs)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd

from uniroute import store
from uniroute.ingest.inbox import PROCESSING, SETTLE_SECONDS, still_being_written
from uniroute.ingest.outcomes import OUTCOME_WAIT_DAYS
from uniroute.pipeline.build.result import tiny_table_note
from uniroute.pipeline.serving import snapshot

SHOWN_OPERATIONS = ("build", "onboard", "retire", "rollback", "publish", "ingest", "inbox", "doctor")


@dataclass(frozen=True)
class Status:
    """What `uniroute status` shows; every field is plain JSON."""

    home: str
    champion: dict[str, Any] | None
    active_models: list[str]
    retired_models: list[str]
    publication: dict[str, Any] | None
    last_runs: list[dict[str, Any]]
    inbox_waiting: list[str]
    inbox_failed: int
    notes: list[str] = field(default_factory=list)
    # the decision spool's finished files, claimed files, failed files, and waiting files modified within the inbox's
    # settle time (written in place, perhaps still growing)
    spool: dict[str, int] | None = None
    outcomes_waiting: int = 0  # outcomes received for decisions not stored yet (they land when those do)
    # What the store recorded that MLflow does not hold yet ({"routers": n, "publications": n}; None: MLflow off,
    # or nothing waits): an operation's detached follow-up, or the next reconciliation, logs it.
    mlflow_pending: dict[str, int] | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def lines(self) -> list[str]:
        """The screen: one line per fact."""
        c = self.champion
        out = [f"home       {self.home}"]
        out.append("champion   none yet (run `uniroute build`)" if c is None else
                   f"champion   {c['router_id']} ({c['kind']}, {c['k']} clusters or neighbours, "
                   f"val Area {_number(c['val_area'])}, {c['origin']} at {c['created_at']})")
        if c is not None and c.get("drift_announced_at"):
            out.append(f"drift      announced for {c['router_id']} at {c['drift_announced_at']} (once per champion "
                       "and training data)")
        out.append(f"pool       {len(self.active_models)} active: {', '.join(self.active_models) or '-'}")
        if self.retired_models:
            out.append(f"retired    {', '.join(self.retired_models)}")
        p = self.publication
        out.append("published  nothing yet (run `uniroute publish`)" if p is None else
                   f"published  {p['version']} for router {p['router_id']} ({len(p['pool'])} models, "
                   f"{p['created_at']})")
        for run in self.last_runs:
            detail = f": {run['detail']}" if run.get("detail") else ""
            out.append(f"last {run['kind']:<6} {run['status']} at {run['started']}{detail}"[:220])
        waiting = f"{len(self.inbox_waiting)} file(s) waiting" + (
            f" ({', '.join(self.inbox_waiting[:5])})" if self.inbox_waiting else "")
        out.append(f"inbox      {waiting}; {self.inbox_failed} in failed/")
        if self.spool is not None:
            s = self.spool
            out.append(f"spool      {s['waiting']} decision file(s) waiting, {s['claimed']} claimed by an interrupted "
                       f"run (.processing/), {s['failed']} in failed/")
            if s.get("writing"):
                out.append(f"spool      {s['writing']} of the waiting file(s) still being written in place (no .part): "
                           "the inbox takes a file once it stands still")
        if self.outcomes_waiting:
            out.append(f"outcomes   {self.outcomes_waiting} wait for their decisions (matched when these land, "
                       f"within {OUTCOME_WAIT_DAYS:g} days)")
        if self.mlflow_pending:
            m = self.mlflow_pending
            out.append(f"mlflow     {m['routers']} router version(s) and {m['publications']} publication(s) wait for "
                       "their MLflow sync (a follow-up is logging them, else `uniroute doctor` does)")
        out += [f"note       {note}" for note in self.notes]
        return out


def _number(value: Any) -> str:
    return "-" if value is None or pd.isna(value) else f"{float(value):.4f}"


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as JSON-ready dicts (timestamps as text, NaN as None)."""
    # A list column (a publication's pool) comes from DuckDB as a list or a numpy array: never NA as a whole.
    return [{k: (None if not pd.api.types.is_list_like(v) and pd.isna(v) else
                 str(v) if isinstance(v, pd.Timestamp) else v) for k, v in row.items()}
            for row in frame.astype(object).to_dict("records")]


def _inbox(inbox_dir: Path) -> tuple[list[str], int]:
    """Complete files waiting in the inbox (not NAME.part, not folders) and the count of files in failed/."""
    if not inbox_dir.is_dir():
        return [], 0
    waiting = sorted(p.name for p in inbox_dir.iterdir()
                     if p.is_file() and not p.name.endswith(".part") and not p.name.startswith("."))
    failed = inbox_dir / "failed"
    count = sum(1 for p in failed.iterdir() if p.is_file() and not p.name.endswith(".reason.txt")) \
        if failed.is_dir() else 0
    return waiting, count


def _spool(spool_dir: Path | None, settle_seconds: float) -> dict[str, int] | None:
    """The decision spool's finished files waiting, files left claimed in .processing/, files in failed/, and the
    waiting files modified within the settle window the inbox run applies (so status and the run agree)."""
    if spool_dir is None or not spool_dir.is_dir():
        return None
    waiting, failed = _inbox(spool_dir)
    claimed = spool_dir / PROCESSING
    return {"waiting": len(waiting), "failed": failed,
            "claimed": sum(1 for p in claimed.iterdir() if p.is_file()) if claimed.is_dir() else 0,
            "writing": len(still_being_written(spool_dir, settle_seconds))}


def _outcomes_waiting(con: Any) -> int:
    """Outcomes waiting for their decisions within the window (0 on a store from before they could wait)."""
    if not bool((store.query_row(con, "table_exists", table_name="pending_outcomes") or (False,))[0]):
        return 0
    since = datetime.now() - timedelta(days=OUTCOME_WAIT_DAYS)
    return int((store.query_row(con, "outcomes_pending_count", since=since) or (0,))[0])


def _from_store(con: Any) -> tuple[dict | None, list[str], list[str], dict | None, list[dict]]:
    champion = _records(store.query(con, "status_champion"))
    models = store.query(con, "status_models")
    publication = _records(store.query(con, "latest_publication").drop(columns=["checksum", "path"]))
    runs = store.query(con, "status_last_operations")
    runs = runs[runs["kind"].isin(SHOWN_OPERATIONS)]
    for item in publication:
        item["pool"] = list(item["pool"])
    # Read-only: a store written before drift_announcements existed is not upgraded by `status`.
    if champion and bool(store.query_row(con, "table_exists",  # type: ignore[index]  # one row, true or false
                                         table_name="drift_announcements")[0]):
        announced = store.query_row(con, "status_drift", router_id=champion[0]["router_id"])
        champion[0]["drift_announced_at"] = None if announced is None else str(announced[0])
    return (champion[0] if champion else None,
            models.model[models.status == "active"].tolist(), models.model[models.status == "retired"].tolist(),
            publication[0] if publication else None, _records(runs))


def _mlflow_pending(con: Any) -> dict[str, int] | None:
    """What MLflow does not hold yet, or None when nothing waits (a store without the MLflow tables: everything
    waits, as it does for `uniroute doctor`, but such a store was never synced and says nothing new)."""
    if not bool((store.query_row(con, "table_exists", table_name="router_mlflow") or (False,))[0]):
        return None
    routers, publications = store.query_row(con, "mlflow_pending_count") or (0, 0)
    return {"routers": int(routers), "publications": int(publications)} if routers or publications else None


def pool_status(home: Path, db_path: Path, published_dir: Path, inbox_dir: Path,
                spool_dir: Path | None = None, mlflow: bool = True,
                settle_seconds: float = SETTLE_SECONDS) -> Status:
    """The status of the store at db_path; while a writer holds it, the published snapshot's view of it. With
    mlflow, what MLflow does not hold yet."""
    waiting, failed = _inbox(inbox_dir)
    spool = _spool(spool_dir, settle_seconds)
    notes: list[str] = []
    if not db_path.exists():
        return Status(str(home), None, [], [], None, [], waiting, failed,
                      ["no store yet: `uniroute ingest` your logs, then `uniroute build`"], spool)
    try:
        con = store.open_read_only(db_path)
    except store.StoreLocked:
        holder = store.current_holder(db_path)
        notes.append(f"the store is held by {holder.line() if holder else 'another process'}: "
                     "champion and pool as the published snapshot has them")
        try:
            snap = snapshot.read_current(published_dir)
        except snapshot.PublishError:
            return Status(str(home), None, [], [], None, [], waiting, failed, notes, spool)
        m = snap.manifest
        champion: dict[str, Any] | None  # the store's, below, may have none
        publication: dict[str, Any] | None
        publication = {"version": snap.version, "router_id": m["router_id"], "pool": list(m["pool"]),
                       "created_at": m.get("created")}
        champion = {"router_id": m["router_id"], "kind": m.get("kind"), "k": None, "val_area": None,
                    "origin": "published", "created_at": m.get("created")}
        return Status(str(home), champion, list(m["pool"]), [], publication, [], waiting, failed, notes, spool)
    try:
        champion, active, retired, publication, runs = _from_store(con)
        pending = _outcomes_waiting(con)
        unsynced = _mlflow_pending(con) if mlflow else None
    finally:
        con.close()
    tiny = None if champion is None else tiny_table_note(champion["kind"], champion["k"])
    notes += [tiny] if tiny else []
    return Status(str(home), champion, active, retired, publication, runs, waiting, failed, notes, spool, pending,
                  unsynced)
