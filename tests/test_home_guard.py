"""The test session keeps out of the default home: its own UNIROUTE_HOME, and a failed run if .uniroute/ grew."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from tests.home_guard import ROOT
from uniroute.settings import Settings

pytest_plugins = ("pytester",)


def test_the_session_routes_into_a_temporary_home_never_the_repositorys() -> None:
    # A test that forgets its own home (the MLflow pyfunc spools with Settings()) writes here, not in .uniroute/.
    home = Settings().home.resolve()
    assert home.parent == Path(tempfile.gettempdir()).resolve(), home
    assert not Settings().spool_dir.resolve().is_relative_to(ROOT)


def run_inner(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.RunResult:
    """A pytest session in pytester's folder with the guard as its only plugin (the others take seconds to load)."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    return pytester.runpytest_inprocess("-p", "tests.home_guard")


def test_a_session_that_writes_into_the_default_home_fails(pytester: pytest.Pytester, monkeypatch) -> None:
    pytester.makepyfile(test_leaky="""
        from pathlib import Path

        def test_routes_without_a_home():
            spool = Path(".uniroute") / "spool" / "decisions"
            spool.mkdir(parents=True)
            (spool / "decisions-1.jsonl").write_text("{}\\n")
    """)
    leaky = run_inner(pytester, monkeypatch)
    leaky.assert_outcomes(passed=1)  # every test passed, and yet the run fails
    assert leaky.ret == pytest.ExitCode.TESTS_FAILED
    leaky.stdout.fnmatch_lines(["*wrote into the default home*spool/decisions/decisions-1.jsonl*"])


def test_a_session_that_keeps_out_of_the_default_home_passes(pytester: pytest.Pytester, monkeypatch) -> None:
    (pytester.path / ".uniroute" / "cache").mkdir(parents=True)  # what was there before the session is no matter
    pytester.makepyfile(test_tidy="def test_nothing():\n    assert True\n")
    tidy = run_inner(pytester, monkeypatch)
    assert tidy.ret == pytest.ExitCode.OK
