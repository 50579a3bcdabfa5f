"""The `uniroute` command line: a thin edge that builds Settings from the environment and calls the library.

Each command module registers its commands on the one Typer `app` (`data`: ingest, synth, sql, models;
`evaluation`: evaluate, report; `operations`: build, onboard, retire, publish, route; `paper`: arena-battles,
annotate); the app imports a command's module when the command runs (`app.COMMAND_MODULES`). Errors are one
line on stderr with a non-zero exit; results go to stdout, as JSON with --json.
"""

from uniroute.cli.app import app

__all__ = ["app"]
