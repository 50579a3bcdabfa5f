"""`make env`'s step that makes the environment's empty MLflow tracking store (uniroute/pipeline/tracking/empty_store.py
seeds new homes with it).

MLflow creates a store in a scratch folder, as a home's first sync creates its own (a client on the sqlite:/// URI,
with the offline switches): every migration it ships runs, and its default experiment is made. The store is then
copied into place (deployments/empty_database.py): the copy holds no run, model or experiment of ours.
"""

from __future__ import annotations

import sys
from pathlib import Path

from deployments.empty_database import template_made, template_step
from uniroute.pipeline.tracking.client import tracking_store
from uniroute.pipeline.tracking.empty_store import tracking_store_template


def make_template(target: Path | None = None) -> Path:
    """The template at target (the environment's place by default), made unless it is there; its path."""
    return template_made(target or tracking_store_template(), _made_by_mlflow)


def _made_by_mlflow(scratch: Path) -> Path:
    database = scratch / "mlflow.db"
    with tracking_store(f"sqlite:///{database}") as client:
        client.search_experiments()  # the store is made on first use
    return database


def main() -> None:
    template_step("MLflow's tracking store for new homes", tracking_store_template(), make_template)


if __name__ == "__main__":
    sys.exit(main())
