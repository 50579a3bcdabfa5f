"""The generators of the docs pages and README blocks that quote saved results: each reads JSON (benchmarks/results/,
docs/results/) and rewrites its page, so no figure in the docs is typed by hand."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
