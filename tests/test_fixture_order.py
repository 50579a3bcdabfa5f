"""Under the random order, each value of a parametrized module fixture is still set up once (tests/fixture_order.py):
the shuffle had interleaved the values, rebuilding the fixture at every switch (a build each in test_quick_route)."""

from __future__ import annotations

import pytest

from tests.home_guard import ROOT

pytest_plugins = ("pytester",)


def test_each_value_of_a_module_fixture_is_set_up_once_and_the_order_stays_random(
        pytester: pytest.Pytester, monkeypatch) -> None:
    pytester.makepyfile(test_kinds="""
        import pytest

        @pytest.fixture(scope="module", params=["a", "b", "c"])
        def built(request):
            with open("ran.log", "a") as f:
                f.write("setup " + request.param + "\\n")
            return request.param

        @pytest.mark.parametrize("i", range(8))
        def test_one(built, i):
            with open("ran.log", "a") as f:
                f.write(f"test {built} {i}\\n")

        def test_plain():
            pass
    """)
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    orders = []
    for seed in (1, 2):
        (pytester.path / "ran.log").unlink(missing_ok=True)
        result = pytester.runpytest_subprocess("-p", "random_order.plugin", "-p", "tests.fixture_order",
                                               "--random-order", f"--random-order-seed={seed}")
        result.assert_outcomes(passed=25)
        lines = (pytester.path / "ran.log").read_text().splitlines()
        assert sorted(line for line in lines if line.startswith("setup")) == ["setup a", "setup b", "setup c"], lines
        orders.append([line for line in lines if line.startswith("test")])
    assert orders[0] != orders[1]  # still shuffled: within each value, and the values' order
