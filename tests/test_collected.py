"""Every folder of tests/ that holds test files is collected: pytest's default `norecursedirs` skips any folder named
`build`, and tests/pipeline/build/ (the build wing's tests) went unrun by `make test` for two days that way."""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_no_folder_holding_tests_is_left_out_of_collection():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert "norecursedirs" in config, "without it pytest's defaults skip tests/**/build/"
    patterns = config["norecursedirs"]
    holding = {p.parent for p in (ROOT / "tests").rglob("test_*.py")}
    skipped = sorted(str(folder.relative_to(ROOT)) for folder in holding
                     for part in folder.relative_to(ROOT / "tests").parts
                     if any(fnmatch.fnmatch(part, pattern) for pattern in patterns))
    assert not skipped, f"folders with tests that pytest would not enter: {skipped}"
