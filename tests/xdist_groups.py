"""Makes `--dist loadgroup` group again: each grouped test's id ends in `@group`, which xdist schedules on.

pytest-xdist 3.8 appends the suffix by setting `item._nodeid`; pytest 9 reads an item's id from `item._id`, so the
suffix never reached the scheduler and every grouped test went to whichever worker was free: the Prefect harness,
the built embedders and module fixtures such as tests/flows/test_pipeline.py's nightly build were set up on both
workers, and `serial` tests ran beside each other. A pytest plugin (tests/conftest.py loads it); once xdist sets
the id itself, an id that already ends in its group is left alone.

It also keeps every other module whole on one worker (`WholeModules`): xdist's loadgroup hands out each ungrouped
test on its own, so a module's tests were spread over both workers and its module fixtures set up on each (96 of
206 files in one run were split, tests/pipeline/build/test_router_kinds.py and tests/robustness/test_crashes.py
among them). And it hands out the long work first, in the collection's order, not xdist's order by test count:
the groups, then the modules holding a `slow` test (`make run`'s story runs minutes; collected last, it ran while
the other worker sat idle), then the rest, each in its random order.
"""

from __future__ import annotations

import pytest
from _pytest.nodeid import NodeId
from xdist.scheduler import LoadGroupScheduling


class WholeModules(LoadGroupScheduling):
    """loadgroup's groups, and every ungrouped test's module as one unit of work, in the collection's order."""

    def _split_scope(self, nodeid: str) -> str:
        scope = super()._split_scope(nodeid)
        return nodeid.split("::", 1)[0] if scope == nodeid else scope

    def schedule(self) -> None:
        # xdist would sort the units by test count (tests/test_architecture.py's quick checks first); the
        # collection is already in the order that finishes soonest (pytest_collection_modifyitems below).
        self.config.option.loadscopereorder = False
        super().schedule()


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which makes the plain loadgroup scheduler
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    return WholeModules(config, log) if config.getvalue("dist") == "loadgroup" else None


@pytest.hookimpl(trylast=True)  # after the groups are marked (tests/conftest.py) and after xdist's own attempt
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not getattr(config.option, "loadgroup", False):  # set on xdist's workers under --dist loadgroup only
        return
    slow_modules = {item.path for item in items if item.get_closest_marker("slow")}
    # Stable: the random order stays within each part. Groups, then slow modules, then the rest.
    items.sort(key=lambda item: (not any(item.iter_markers("xdist_group")), item.path not in slow_modules))
    for item in items:
        groups = sorted({str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
                         for mark in item.iter_markers("xdist_group")})
        suffix = "@" + "_".join(groups)
        if groups and not item.nodeid.endswith(suffix):
            item._id = NodeId.parse(item.nodeid + suffix)  # the string form is what the worker reports
