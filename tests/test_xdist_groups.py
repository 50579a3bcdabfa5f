"""`--dist loadgroup` keeps a group on one worker: what `make test` relies on to start the Prefect harness, build
the embedders and set up module fixtures once, and to keep `serial` tests off each other's toes; and the long
(`slow`) tests start before the short ones, so no worker idles at the end while the other runs a long test."""

from __future__ import annotations

import pytest

from tests.home_guard import ROOT

pytest_plugins = ("pytester",)


def test_a_group_or_module_runs_on_one_worker_with_its_module_fixture_set_up_once_and_slow_tests_start_first(
        pytester: pytest.Pytester, monkeypatch) -> None:
    # Three modules of one group, each with a module fixture, beside ungrouped tests that keep both workers busy.
    for name in ("a", "b", "c"):
        pytester.makepyfile(**{f"test_{name}": f"""
            import os
            import time

            import pytest

            def log(line):
                with open("ran.log", "a") as f:
                    f.write(line + " " + os.environ["PYTEST_XDIST_WORKER"] + "\\n")

            @pytest.fixture(scope="module")
            def costly():
                log("setup {name}")

            @pytest.mark.xdist_group("costly")
            @pytest.mark.parametrize("i", range(3))
            def test_grouped(costly, i):
                log("grouped {name}")
                time.sleep(0.1)

            @pytest.fixture(scope="module")
            def module_wide():
                log("module {name}")

            @pytest.mark.parametrize("i", range(6))
            def test_free(module_wide, i):
                log("free {name}")
                time.sleep(0.05)
        """})
    pytester.makepyfile(test_z_long="""
        import os

        import pytest

        @pytest.mark.slow
        def test_long():
            with open("ran.log", "a") as f:
                f.write("slow z " + os.environ["PYTEST_XDIST_WORKER"] + "\\n")
    """)
    pytester.makeini("[pytest]\nmarkers =\n    slow: long\n")
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")  # the other plugins take seconds to load, twice
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    result = pytester.runpytest_subprocess("-p", "xdist", "-p", "tests.xdist_groups", "-n", "2",
                                           "--dist", "loadgroup")
    result.assert_outcomes(passed=28)
    lines = [line.split() for line in (pytester.path / "ran.log").read_text().splitlines()]
    grouped = [line for line in lines if line[0] in ("setup", "grouped")]
    assert len({worker for *_, worker in grouped}) == 1, lines  # every grouped test and set-up on one worker
    assert sorted(name for what, name, _ in grouped if what == "setup") == ["a", "b", "c"], lines  # once per module
    # The ungrouped tests of a module run on one worker too: its module fixture is set up once.
    assert sorted(name for what, name, _ in lines if what == "module") == ["a", "b", "c"], lines
    assert all(len({w for what, n, w in lines if what == "free" and n == name}) == 1 for name in "abc"), lines
    # The groups go out first, then the slow module (collected last) before the short tests.
    [slow_worker] = [worker for what, _, worker in lines if what == "slow"]
    assert [what for what, _, worker in lines if worker == slow_worker][0] == "slow", lines
