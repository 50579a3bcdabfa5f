"""Reconciliation (`uniroute doctor`, and the start of every flow): check the invariants, repair what is derived.

The store is the single source of truth. Everything else is derived from it and can be redone after a crash:

1. runs that were killed are marked 'interrupted' in the operations log (the session does it, and reports them);
2. every active model with validation results and a cost is routed by the champion (else: onboarded);
3. `published/current` names the store's newest publication, whose folder is complete (else: re-pointed; a
   damaged newest folder: the champion published again);
4. no files the store does not account for: snapshot folders of unrecorded versions, staging folders, stray
   links (removed), files claimed by a killed inbox run (reported: `uniroute inbox` finishes them), spill
   folders of a killed `uniroute sql` and DuckDB spill files of a killed writer beside the store (removed);
5. MLflow's tracking store keeps its artifacts in this home (a store copied or moved with its home: its recorded
   URIs rewritten; another home's: reported);
6. MLflow holds every router version and publication, and its alias `champion` names the store's champion
   (else: logged, registered, re-pointed).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from uniroute import store
from uniroute.errors import DiskFull, is_disk_full
from uniroute.ingest.inbox import PROCESSING
from uniroute.pipeline.pool import registry
from uniroute.pipeline.pool.evidence import MIN_VAL_ANSWERS
from uniroute.pipeline.pool.evidence_gate import GateThresholds
from uniroute.pipeline.pool.onboard import OnboardError, missing_from_champion, onboard_models
from uniroute.pipeline.serving import publish, snapshot

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Finding:
    """One checked invariant: 'ok'; 'synced' (derived state brought up to date, the normal follow-up of an
    operation); 'pending' (work another run is about to do, e.g. an onboarding its event triggered); 'repaired'
    (it did not hold, a sign of an interrupted run, and now does); 'broken' (it does not hold)."""

    check: str
    status: str
    detail: str

    def line(self) -> str:
        return f"{self.status:<8} {self.check}: {self.detail}"


@dataclass
class Report:
    """What reconciliation found and repaired."""

    findings: list[Finding] = field(default_factory=list)

    def add(self, check: str, status: str, detail: str) -> None:
        self.findings.append(Finding(check, status, detail))

    @property
    def healthy(self) -> bool:
        return all(f.status != "broken" for f in self.findings)

    @property
    def repaired(self) -> list[Finding]:
        return [f for f in self.findings if f.status == "repaired"]

    def lines(self) -> list[str]:
        return [f.line() for f in self.findings]


def _check_pool(con: store.Connection, report: Report, repair: bool, cache_dir: Path | None,
                onboard_missing: bool, min_answers: int, gate: GateThresholds) -> None:
    missing = missing_from_champion(con, min_answers)
    if not missing:
        champion = registry.champion_id(con)
        report.add("pool", "ok", f"every active model is routed by champion {champion}" if champion
                   else "no champion yet (nothing built)")
        return
    if repair and not onboard_missing:
        # Where results that land trigger an onboarding run (the inbox flow's event), that run adds the models;
        # reconciliation at the start of a flow must not do its job first. Nothing is lost if the run died:
        # `uniroute doctor` and the next build add every such model.
        report.add("pool", "pending", f"active models {missing} wait for their onboarding run "
                   "(the event their results emitted; `uniroute onboard` or `uniroute doctor` adds them too)")
        return
    if not repair:
        report.add("pool", "broken", f"active models {missing} are not in the champion router")
        return
    try:
        result = onboard_models(con, missing, cache_dir=cache_dir, min_answers=min_answers, gate=gate)
    except (OnboardError, LookupError) as exc:
        report.add("pool", "broken", f"active models {missing} are not in the champion router and cannot be "
                   f"onboarded: {exc}")
        return
    report.add("pool", "repaired", f"onboarded {missing} (were missing from the champion) -> router {result.router_id}")


def _republish(s: store.Session, published_dir: Path, version: str, damage: str, report: Report,
               repair: bool) -> None:
    """The newest publication's folder is damaged: publish the champion again (what `publish --force` does) and
    switch `current` to it after the commit; the damaged folder stays, recorded, for a look."""
    if not repair:
        report.add("published", "broken", f"the newest publication {version} is damaged: {damage}; `uniroute doctor` "
                   "(or `uniroute publish --force`) publishes it again")
        return
    try:
        result = publish.publish_champion(s.con, published_dir, force=True)
    except snapshot.PublishError as exc:
        report.add("published", "broken", f"the newest publication {version} is damaged: {damage}; publishing it "
                   f"again failed: {exc}")
        return
    publish.switch_current_after_commit(s, published_dir, result)
    report.add("published", "repaired", f"the newest publication {version} was damaged ({damage}): published the "
               f"champion again as {result.version}, current once this run commits")


def _check_published(s: store.Session, published_dir: Path, report: Report, repair: bool) -> None:
    con = s.con
    try:
        snapshot.check_current_link(published_dir)
    except snapshot.PublishError as exc:  # a user's folder or file: not ours to remove
        report.add("published", "broken", str(exc))
        return
    latest = publish.latest_publication(con)
    current = snapshot.current_version(published_dir)
    if latest is None:
        report.add("published", "ok" if current is None else "broken",
                   "nothing published yet" if current is None else f"`current` names {current}, which the store "
                   "does not record")
    else:
        try:
            snapshot.read_snapshot(published_dir / latest["version"])
        except snapshot.PublishError as exc:
            _republish(s, published_dir, latest["version"], str(exc), report, repair)
            return
        if current == latest["version"]:
            report.add("published", "ok", f"`current` is the newest publication {current}")
        elif repair:
            snapshot.make_current(published_dir, latest["version"])
            report.add("published", "repaired", f"`current` pointed at {current}; now at the newest publication "
                       f"{latest['version']}")
        else:
            report.add("published", "broken", f"`current` is {current}, the newest publication is {latest['version']}")
    versions = set(store.query(con, "publication_versions").version)
    strays = snapshot.stray_entries(published_dir, versions)
    if not strays:
        report.add("files", "ok", "no stray snapshot folders")
    elif repair:
        for path in strays:
            snapshot.remove_entry(path)
        report.add("files", "repaired", f"removed {len(strays)} stray snapshot entries: "
                   f"{', '.join(p.name for p in strays[:5])}{' ...' if len(strays) > 5 else ''}")
    else:
        report.add("files", "broken", f"{len(strays)} stray snapshot entries: {', '.join(p.name for p in strays[:5])}")


def _check_inbox(inbox_dir: Path | None, report: Report, area: str = "inbox") -> None:
    """Files an interrupted inbox run left claimed in a folder's .processing/ (the inbox's, or the spool's)."""
    if inbox_dir is None:
        return

    claimed = sorted((inbox_dir / PROCESSING).glob("*")) if (inbox_dir / PROCESSING).exists() else []
    if claimed:
        report.add(area, "broken", f"{len(claimed)} file(s) claimed by an interrupted inbox run "
                   f"({', '.join(p.name for p in claimed[:5])}); `uniroute inbox` finishes them")
    else:
        report.add(area, "ok", "no file left half-processed")


def _check_temp(tmp_dir: Path | None, report: Report, repair: bool) -> None:
    if tmp_dir is None:
        return
    stale = store.stale_temp_dirs(tmp_dir)
    names = ", ".join(p.name for p in stale[:5]) + (" ..." if len(stale) > 5 else "")
    if not stale:
        report.add("tmp", "ok", "no spill folder left by a killed `uniroute sql`")
    elif repair:
        for path in stale:
            store.remove_temp_dir(path)
        report.add("tmp", "repaired", f"removed {len(stale)} spill folder(s) of killed `uniroute sql` runs: {names}")
    else:
        report.add("tmp", "broken", f"{len(stale)} spill folder(s) of killed `uniroute sql` runs in {tmp_dir}: "
                   f"{names} (`uniroute doctor` or the next `uniroute sql` removes them)")


def _check_store_spill(db_path: Path, report: Report, repair: bool) -> None:
    stale = store.stale_spill_files(db_path)
    folder = store.spill_dir(db_path)
    if not stale:
        report.add("spill", "ok", "no spill file left by a killed writer beside the store")
        return
    size = f"{len(stale)} spill file(s), {store.spilled_bytes(stale) / 1e6:,.1f} MB"
    if repair:
        store.remove_spill_files(db_path, stale)
        report.add("spill", "repaired", f"removed {size} of killed writers (an interrupted ingest or build) from "
                   f"{folder}; the store is as its last commit left it")
    else:
        report.add("spill", "broken", f"{size} of killed writers (an interrupted ingest or build) in {folder} "
                   "(`uniroute doctor` removes them)")


def _check_tracking_location(tracking_uri: str, artifact_root: Path, report: Report, repair: bool) -> bool:
    """Whether the tracking store's artifacts are this home's (a store that moved with its home is rewritten)."""
    from uniroute.pipeline.tracking.relocate import relocate_tracking_store, tracking_location

    try:
        location = tracking_location(tracking_uri, artifact_root)
    except store.StoreError as exc:  # a damaged mlflow.db: the store stands, MLflow waits for the repair it names
        report.add("mlflow", "broken", str(exc))
        return False
    if location is None:
        return True
    if location.moved and repair:
        report.add("mlflow", "repaired", f"{relocate_tracking_store(tracking_uri, artifact_root)}: rewritten")
        return True
    if location.moved:
        report.add("mlflow", "broken", f"{location.line()} (the home was copied or moved): `uniroute doctor` "
                   "rewrites them")
    else:
        report.add("mlflow", "broken", location.refusal())
    return False


def _mlflow_pending(con: store.Connection, tracking_uri: str, report: Report) -> bool:
    """Whether the store recorded what MLflow does not hold yet (said as pending: an operation's follow-up or the
    next reconciliation logs it, and MLflow's champion alias follows then)."""
    from uniroute.pipeline import tracking

    if not bool((store.query_row(con, "table_exists", table_name="router_mlflow") or (False,))[0]):
        return False
    routers, publications = store.query_row(con, "mlflow_pending_count") or (0, 0)
    if not routers and not publications:
        return False
    champion, in_mlflow = registry.champion_id(con), tracking.mlflow_champion_router(tracking_uri)
    alias = "" if champion == in_mlflow else f"; until then MLflow's champion is router {in_mlflow}, the store's is " \
        f"{champion}"
    report.add("mlflow", "pending", f"{routers} router version(s) and {publications} publication(s) wait for their "
               "MLflow sync: an operation's follow-up logs them (logs/mlflow-sync.log), else `uniroute doctor`"
               + alias)
    return True


def _check_mlflow(con: store.Connection, tracking_uri: str, artifact_root: Path, report: Report, repair: bool,
                  published_dir: Path) -> None:
    # The MLflow checks alone import the tracking room: an operation whose MLflow side a follow-up process logs
    # (operations.mlflow_after) reconciles the store's side without it.
    from uniroute.pipeline import tracking
    from uniroute.pipeline.tracking.relocate import tracking_store_file

    db_file = tracking_store_file(tracking_uri)
    if not repair and db_file is not None and not db_file.exists():
        # Only a check: opening MLflow would create the file (and cannot, in a read-only home).
        champion = registry.champion_id(con)
        report.add("mlflow", "broken" if champion else "ok",
                   f"{db_file} does not exist: `uniroute doctor` logs every router version and publication to a new "
                   "one" if champion else "no champion yet")
        return
    if not _check_tracking_location(tracking_uri, artifact_root, report, repair):
        return
    if not repair and _mlflow_pending(con, tracking_uri, report):
        return
    if repair:
        try:
            synced = tracking.sync_mlflow(con, tracking_uri, artifact_root, published_dir=published_dir)
        except OSError as exc:
            if not is_disk_full(exc):
                raise
            # What was logged before the disk filled is recorded; the rest waits for space and the next sync.
            full = DiskFull(exc.filename or artifact_root, "MLflow did not log the rest; the store is unchanged")
            report.add("mlflow", "broken", f"{full} (`uniroute doctor` logs what is missing)")
            return
        for line in synced.lines():
            # Adopting a version the store had not recorded means a run died between the two, a lost one that
            # mlflow.db was deleted or replaced; the rest is routine.
            report.add("mlflow", "repaired" if line.startswith(("adopted", "MLflow had lost")) else "synced", line)
    champion = registry.champion_id(con)
    in_mlflow = tracking.mlflow_champion_router(tracking_uri)
    if champion == in_mlflow:
        report.add("mlflow", "ok", f"alias champion names the store's champion {champion}" if champion
                   else "no champion yet")
    else:
        report.add("mlflow", "broken", f"MLflow's champion is router {in_mlflow}, the store's is {champion}")


def reconcile(
    s: store.Session,
    published_dir: Path,
    tracking_uri: str | None,
    artifact_root: Path | None,
    inbox_dir: Path | None = None,
    repair: bool = True,
    cache_dir: Path | None = None,
    onboard_missing: bool = True,
    min_answers: int = MIN_VAL_ANSWERS,
    tmp_dir: Path | None = None,
    gate: GateThresholds = GateThresholds(),
    spool_dir: Path | None = None,
) -> Report:
    """Check every invariant in the caller's session and, with repair, restore what is derived from the store.

    onboard_missing False (a flow's start): active models missing from the champion are reported as pending,
    not onboarded: their event-triggered onboarding run adds them.
    """
    report = Report()
    report.add("operations", "repaired" if s.interrupted else "ok",
               f"marked interrupted: {', '.join(s.interrupted)}" if s.interrupted else "no run was left unfinished")
    _check_pool(s.con, report, repair, cache_dir, onboard_missing, min_answers, gate)
    _check_published(s, Path(published_dir), report, repair)
    _check_inbox(inbox_dir, report)
    _check_inbox(spool_dir, report, "spool")
    _check_temp(tmp_dir, report, repair)
    _check_store_spill(s.db_path, report, repair)
    if tracking_uri is not None and artifact_root is not None:
        _check_mlflow(s.con, tracking_uri, Path(artifact_root), report, repair, Path(published_dir))
    for finding in report.findings:
        log.info(finding.line())
    return report
