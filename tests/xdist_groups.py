"""Makes `--dist loadgroup` group again: each grouped test's id ends in `@group`, which xdist schedules on.

pytest-xdist 3.8 appends the suffix by setting `item._nodeid`; pytest 9 reads an item's id from `item._id`, so the
suffix never reached the scheduler and every grouped test went to whichever worker was free: the Prefect harness,
the built embedders and module fixtures such as tests/flows/test_pipeline.py's nightly build were set up on both
workers, and `serial` tests ran beside each other. A pytest plugin (tests/conftest.py loads it); once xdist sets
the id itself, an id that already ends in its group is left alone.

It also hands out the long tests first: xdist gives the groups out first (largest first), then single tests in
collection order, so a `slow` test collected last (`make run`'s story takes three minutes) ran while the other
worker sat idle. Modules holding a `slow` test now come before the others, each kept whole (a module fixture is
set up once per worker) and in its random order.
"""

from __future__ import annotations

import pytest
from _pytest.nodeid import NodeId


@pytest.hookimpl(trylast=True)  # after the groups are marked (tests/conftest.py) and after xdist's own attempt
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not getattr(config.option, "loadgroup", False):  # set on xdist's workers under --dist loadgroup only
        return
    slow_modules = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_modules)  # stable: the random order stays within each part
    for item in items:
        groups = sorted({str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
                         for mark in item.iter_markers("xdist_group")})
        suffix = "@" + "_".join(groups)
        if groups and not item.nodeid.endswith(suffix):
            item._id = NodeId.parse(item.nodeid + suffix)  # the string form is what the worker reports
