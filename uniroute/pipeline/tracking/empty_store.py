"""A new home's MLflow tracking store, copied from the environment's empty one rather than created by MLflow.

MLflow makes a new SQLite tracking store by running every migration it ships: 2.5 CPU-seconds against 1.2 to open
one that exists (a new process each, 2026-11-30), paid by every new home's first sync (its first build's MLflow side,
`make run`'s story) and by `make serve`'s MLflow UI. `make env` keeps one empty, migrated store per MLflow release
among the environment's built files (deployments/mlflow_template.py). A home without mlflow.db gets a copy, its
default experiment's artifact location set under the home's artifact root (where MLflow's UI would put it). MLflow still
checks the copy's revision when it opens it, so a copy never skips a migration; without a template (uniroute
installed without `make env`) MLflow creates the store as before.
"""

from __future__ import annotations

import shutil
import sqlite3
from contextlib import closing
from importlib.metadata import version
from pathlib import Path

from uniroute.environment import ENVIRONMENT_FOLDER, linked_into_place
from uniroute.pipeline.tracking.relocate import tracking_store_file


def tracking_store_template() -> Path:
    """Where the environment keeps an empty, migrated tracking store for the installed MLflow release."""
    return ENVIRONMENT_FOLDER / f"mlflow-{version('mlflow')}.db"


def seed_tracking_store(tracking_uri: str, artifact_root: Path) -> bool:
    """Give a sqlite:/// tracking URI whose file does not exist a copy of the environment's template; whether it did.

    The copy is written beside the store's place and linked there in one step that never replaces a file
    (environment.linked_into_place): a store another process made meanwhile stays, a copy that fails halfway leaves
    nothing, and where the filesystem has no hard links MLflow makes the store as before."""
    db_file, template = tracking_store_file(tracking_uri), tracking_store_template()
    if db_file is None or db_file.exists() or not template.exists():
        return False
    db_file.parent.mkdir(parents=True, exist_ok=True)

    def copy(part: Path) -> None:
        shutil.copyfile(template, part)
        with closing(sqlite3.connect(part)) as con, con:
            # Experiment 0, "Default", which MLflow makes with every store (uniroute logs to its own experiment): a
            # file URI under the home's root, as our experiment's, so a moved home's relocation rewrites it too.
            con.execute("update experiments set artifact_location = ? where experiment_id = 0",
                        ((Path(artifact_root).resolve() / "0").as_uri(),))

    return linked_into_place(db_file, copy)
