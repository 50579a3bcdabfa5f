"""The test session never touches the default home: UNIROUTE_HOME points at a temporary folder for the whole
session, and the run fails when the repository's (or the working directory's) `.uniroute/` gained anything.

A pytest plugin (tests/conftest.py loads it): a test that routes, spools or builds without its own home used to
leave `.uniroute/spool/decisions/` behind, and `make run` then refused the home it had not created.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_HOME = ".uniroute"  # Settings.home when UNIROUTE_HOME is unset, relative to the working directory
SESSION_HOME_PREFIX = "uniroute-test-session-home-"


def isolate_home() -> Path:
    """Point UNIROUTE_HOME at a fresh temporary folder (per process: xdist workers get their own); its path."""
    path = Path(tempfile.mkdtemp(prefix=SESSION_HOME_PREFIX))
    os.environ["UNIROUTE_HOME"] = str(path)
    # Removed at exit, registered first so run last: a served model's spool finishes its file in its own exit hook.
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def contents(folder: Path) -> frozenset[str]:
    """Every path below folder, relative to it (empty when it does not exist)."""
    if not folder.is_dir():
        return frozenset()
    return frozenset(str(p.relative_to(folder)) for p in folder.rglob("*"))


class DefaultHomeGuard:
    """Remembers what the default homes held at the session's start; fails the run if they gained anything."""

    def __init__(self, folders: list[Path]) -> None:
        self.before = {folder: contents(folder) for folder in dict.fromkeys(f.resolve() for f in folders)}

    def gained(self) -> dict[Path, list[str]]:
        """Per default home, what appeared in it since the session started."""
        out = {folder: sorted(contents(folder) - was) for folder, was in self.before.items()}
        return {folder: new for folder, new in out.items() if new}

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        gained = self.gained()
        if not gained:
            return
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        for folder, new in gained.items():
            line = (f"the test session wrote into the default home {folder} ({len(new)} new paths, e.g. "
                    f"{', '.join(new[:3])}): a test ran without its own UNIROUTE_HOME")
            if reporter is not None:
                reporter.write_line(f"ERROR: {line}", red=True)
            else:
                print(f"ERROR: {line}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_configure(config: pytest.Config) -> None:
    """Guard the default homes from the controlling process only (xdist workers share its folders)."""
    if hasattr(config, "workerinput"):
        return
    guard = DefaultHomeGuard([ROOT / DEFAULT_HOME, Path.cwd() / DEFAULT_HOME])
    config.pluginmanager.register(guard, "uniroute-default-home-guard")
