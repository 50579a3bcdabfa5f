"""Rewrite one generated block of the README, between `<!-- NAME -->` and `<!-- /NAME -->`, leaving the rest."""

from __future__ import annotations

import re
from pathlib import Path

from tools.pages import REPO

README = REPO / "README.md"


def rewrite_block(name: str, body: str, path: Path = README) -> None:
    """Replace the block's content with body (which ends with a newline); a missing block is an error."""
    start, end = f"<!-- {name} -->", f"<!-- /{name} -->"
    text = path.read_text()
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.S)
    if not pattern.search(text):
        raise SystemExit(f"{path}: no {start} ... {end} block to rewrite")
    path.write_text(pattern.sub(lambda _: f"{start}\n{body}{end}", text))
