"""`make env`'s step that makes the environment's empty MLflow tracking store (uniroute/pipeline/tracking/empty_store.py
seeds new homes with it).

MLflow creates a store in a scratch folder, as a home's first sync creates its own (a client on the sqlite:/// URI,
with the offline switches): every migration it ships runs, and its default experiment is made. The store is then
copied, in one consistent piece (SQLite's backup), to the template's place under another name and renamed there.
Nothing else has used it, so the copy holds no run, model or experiment of ours.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from deployments.serve import renamed_into_place, sqlite_backup
from uniroute.pipeline.tracking.client import tracking_store
from uniroute.pipeline.tracking.empty_store import tracking_store_template


def make_template(target: Path | None = None) -> Path:
    """The template at target (the environment's place by default), made unless it is there; its path."""
    target = target or tracking_store_template()
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="mlflow-template-") as scratch:
        database = Path(scratch) / "mlflow.db"
        with tracking_store(f"sqlite:///{database}") as client:
            client.search_experiments()  # the store is made on first use
        renamed_into_place(target, lambda part: sqlite_backup(database, part))
    return target


def main() -> None:
    started = time.monotonic()
    target = tracking_store_template()
    if target.exists():
        print(f"MLflow's tracking store for new homes: {target} (already made)", flush=True)
        return
    make_template(target)
    print(f"MLflow's tracking store for new homes: {target} ({time.monotonic() - started:.0f} s)", flush=True)


if __name__ == "__main__":
    sys.exit(main())
