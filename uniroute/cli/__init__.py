"""The `uniroute` command line: a thin edge that builds Settings from the environment and calls the library.

Each command module registers its commands on the one Typer `app`, one module per wing of the pipeline
(`intake`: ingest, inbox, synth, models; `build`; `pool`: onboard, onboarding-set, retire, rollback; `serving`:
route, publish, sql, status; `traffic`: replay; `upkeep`: doctor) and the paper's side branch (`evaluation`:
evaluate, report; `paper`: arena-battles, annotate); the app imports a command's module when the command runs
(`app.COMMAND_MODULES`). Errors are one line on stderr with a non-zero exit; results go to stdout, as JSON with --json.
"""

from uniroute.cli.app import app

__all__ = ["app"]
