"""Keeps a module's tests that share a parametrized module (or wider) fixture's value together, in the random order.

pytest orders such tests so each value of the fixture is set up once; pytest-random-order then shuffles each
module's tests, so the values interleave and each switch tears the fixture down and builds it again:
tests/pipeline/serving/test_quick_route.py built its three published homes (one build each) 16 times instead of 3.
Run after the shuffle, this puts each value's tests together, the values in the order they first appear and each
value's tests in their shuffled order: the order is still random, only no longer interleaved. A pytest plugin
(tests/conftest.py loads it).
"""

from __future__ import annotations

import itertools

import pytest


def _wide_params(item: pytest.Item) -> tuple[tuple[str, int], ...]:
    """Which value of each parametrized fixture wider than a test the item uses: (name, index) pairs."""
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return ()
    fixtures = item._fixtureinfo.name2fixturedefs
    return tuple((name, index) for name, index in sorted(callspec.indices.items())
                 if name in fixtures and fixtures[name][-1].scope != "function")


@pytest.hookimpl(trylast=True)  # after pytest-random-order's shuffle (a plain hook)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    ordered: list[pytest.Item] = []
    for _, module in itertools.groupby(items, key=lambda item: item.path):  # each module's run of tests stays put
        tests = list(module)
        first_seen: dict[tuple[tuple[str, int], ...], int] = {}
        for item in tests:
            first_seen.setdefault(_wide_params(item), len(first_seen))
        ordered.extend(sorted(tests, key=lambda item: first_seen[_wide_params(item)]))  # stable: shuffled within
    items[:] = ordered
