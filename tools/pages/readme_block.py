"""Rewrite one generated block of docs/results.md, between `<!-- NAME -->` and `<!-- /NAME -->`, leaving the rest."""

from __future__ import annotations

import re
from pathlib import Path

from tools.pages import REPO

PAGE = REPO / "docs" / "results.md"  # the generated tables' page (the README links it)


def rewrite_block(name: str, body: str, path: Path = PAGE) -> None:
    """Replace the block's content with body (which ends with a newline); a missing block is an error."""
    start, end = f"<!-- {name} -->", f"<!-- /{name} -->"
    text = path.read_text()
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.S)
    if not pattern.search(text):
        raise SystemExit(f"{path}: no {start} ... {end} block to rewrite")
    path.write_text(pattern.sub(lambda _: f"{start}\n{body}{end}", text))
