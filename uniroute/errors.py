"""The one base of every error the library raises on purpose: the edges (CLI, flows) catch it once.

Each subclass keeps its builtin base too (ValueError, RuntimeError, LookupError), so code that caught the
builtin before still does.
"""

from __future__ import annotations


class UnirouteError(Exception):
    """An error whose message is the whole story: the CLI prints it as one line, never a traceback."""
