"""`make env`'s step that makes the environment's empty Prefect database (deployments/serve.py seeds new homes with it).

A real Prefect server starts once in a scratch home, as `make run` and `make serve` start it (the same command and
environment): it migrates its database and registers Prefect's block types, and answers. It is then stopped and its
database copied, in one consistent piece (SQLite's backup), to the template's place under another name and renamed
there. Nothing else has used that server, so the copy holds no flow, run or deployment.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from deployments.serve import (
    PREFECT_DATABASE,
    free_port,
    prefect_database_template,
    prefect_server_command,
    renamed_into_place,
    running,
    server_environment,
    sqlite_backup,
)
from uniroute.settings import Settings

# Settings that would point the scratch server at another database than its own home's, or at another server.
DATABASE_SETTINGS = ("PREFECT_API_DATABASE_CONNECTION_URL", "PREFECT_SERVER_DATABASE_CONNECTION_URL", "PREFECT_API_URL")


def make_template(target: Path | None = None) -> Path:
    """The template at target (the environment's place by default), made unless it is there; its path."""
    target = target or prefect_database_template()
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="prefect-template-") as scratch:
        settings = Settings(home=Path(scratch) / "home")
        env = {k: v for k, v in server_environment(settings).items() if k not in DATABASE_SETTINGS}
        command, url = prefect_server_command(free_port())
        with running(command, env, Path(scratch) / "prefect-server.log", f"{url}/health"):
            pass  # started, migrated, answered: stopped on leaving the block
        renamed_into_place(target, lambda part: sqlite_backup(settings.prefect_home / PREFECT_DATABASE, part))
    return target


def main() -> None:
    started = time.monotonic()
    target = prefect_database_template()
    if target.exists():
        print(f"Prefect's database for new homes: {target} (already made)", flush=True)
        return
    make_template(target)
    print(f"Prefect's database for new homes: {target} ({time.monotonic() - started:.0f} s)", flush=True)


if __name__ == "__main__":
    sys.exit(main())
