"""The inbox: complete files dropped into $UNIROUTE_HOME/inbox are ingested, then moved to done/ or failed/."""

from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


PARTIAL_SUFFIXES = (".part", ".partial", ".tmp", ".crdownload")
REASON_SUFFIX = ".reason.txt"


def inbox_files(inbox_dir: Path) -> list[Path]:
    """The files waiting in the inbox (not hidden, not partial), by name."""
    return sorted(
        p for p in Path(inbox_dir).iterdir()
        if p.is_file() and not p.name.startswith(".") and not p.name.endswith(PARTIAL_SUFFIXES)
    )


def _moved(path: Path, folder: Path) -> Path:
    """Move a file into a folder without overwriting an earlier file of the same name; the new path."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / path.name
    counter = 1
    while target.exists():
        target = folder / f"{path.stem}.{counter}{path.suffix}"
        counter += 1
    shutil.move(str(path), str(target))
    return target


def process_inbox(db_path: Path, inbox_dir: Path, split: str | None = None,
                  progress: bool = False) -> list[InboxOutcome]:
    """Ingest every file waiting in the inbox; move each to done/, or to failed/ with the reason beside it."""
    inbox_dir = Path(inbox_dir)
    inbox_dir.mkdir(parents=True, exist_ok=True)
    outcomes: list[InboxOutcome] = []
    for path in inbox_files(inbox_dir):
        try:
            summary = ingest_file(db_path, path, split=split, progress=progress)
        except IngestError as exc:
            target = _moved(path, inbox_dir / "failed")
            target.with_name(target.name + REASON_SUFFIX).write_text(f"{exc}\n")
            log.warning("%s -> %s: %s", path.name, target, exc)
            outcomes.append(InboxOutcome(path.name, "failed", str(target), None, str(exc)))
            continue
        target = _moved(path, inbox_dir / "done")
        outcomes.append(InboxOutcome(path.name, summary.status, str(target), summary, None))
    return outcomes
