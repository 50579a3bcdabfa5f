"""`make env`'s step that makes the environment's empty Prefect database (deployments/serve.py seeds new homes with it).

A real Prefect server starts once in a scratch home, as `make run` and `make serve` start it (the same command and
environment): it migrates its database and registers Prefect's block types, and answers. It is then stopped and its
database copied into place (deployments/empty_database.py): the copy holds no flow, run or deployment.
"""

from __future__ import annotations

import sys
from pathlib import Path

from deployments.empty_database import template_made, template_step
from deployments.serve import (
    PREFECT_DATABASE,
    free_port,
    prefect_database_template,
    prefect_server_command,
    running,
    server_environment,
)
from uniroute.settings import Settings

# Settings that would point the scratch server at another database than its own home's, or at another server.
DATABASE_SETTINGS = ("PREFECT_API_DATABASE_CONNECTION_URL", "PREFECT_SERVER_DATABASE_CONNECTION_URL", "PREFECT_API_URL")


def make_template(target: Path | None = None) -> Path:
    """The template at target (the environment's place by default), made unless it is there; its path."""
    return template_made(target or prefect_database_template(), _migrated_by_a_server)


def _migrated_by_a_server(scratch: Path) -> Path:
    settings = Settings(home=scratch / "home")
    env = {k: v for k, v in server_environment(settings).items() if k not in DATABASE_SETTINGS}
    command, url = prefect_server_command(free_port())
    with running(command, env, scratch / "prefect-server.log", f"{url}/health"):
        pass  # started, migrated, answered: stopped on leaving the block
    return settings.prefect_home / PREFECT_DATABASE


def main() -> None:
    template_step("Prefect's database for new homes", prefect_database_template(), make_template)


if __name__ == "__main__":
    sys.exit(main())
