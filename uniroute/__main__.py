"""`python -m uniroute`: the command line."""

from uniroute.cli import app

app()
