"""The mutation runner's own parts (benchmarks/mutation): which mutants a file has, that a mutant reaches the
functions other modules imported by name, and the score it reports."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from benchmarks.mutation import patch
from benchmarks.mutation.__main__ import summarise
from benchmarks.mutation.operators import mutants, mutated_tree
from benchmarks.mutation.runner import ModuleRun, Outcome

SOURCE = '''"""A module to mutate."""
import logging

log = logging.getLogger(__name__)
LIMIT = 3


def over(x: int) -> bool:
    """Docstrings and log calls are never mutated."""
    log.info("checking %s", x)
    return x > LIMIT and not x == 7


class Box:
    def grow(self, n: int) -> int:
        if n < 0:
            raise ValueError("negative")
        return n + 1

    def stub(self) -> None:
        raise NotImplementedError
'''


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    (tmp_path / "toy_mutated.py").write_text(SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("toy_mutated")
    yield module
    sys.modules.pop("toy_mutated", None)


def test_the_mutants_of_a_file_have_stable_keys():
    keys = [m.key for m in mutants(SOURCE)]
    assert keys == [  # by line, then key
        "<module>: number+1: 3#1",
        "over: And->Or: x > LIMIT and not x == 7#1",
        "over: Eq->NotEq: x == 7#1",
        "over: Gt->GtE: x > LIMIT#1",
        "over: delete statement: return x > LIMIT and not x == 7#1",
        "over: drop not: not x == 7#1",
        "over: number+1: 7#1",
        "Box.grow: 0->1: 0#1",
        "Box.grow: Lt->LtE: n < 0#1",
        'Box.grow: delete statement: raise ValueError("negative")#1',
        "Box.grow: Add->Sub: n + 1#1",
        "Box.grow: delete statement: return n + 1#1",
        "Box.grow: number+1: 1#1",
    ]


def test_a_mutant_reaches_functions_imported_by_name_and_module_constants(toy):
    over, box = toy.over, toy.Box()  # as `from toy_mutated import over` would hold them
    by_key = {m.key: m for m in mutants(SOURCE)}
    assert over(3) is False
    assert patch.apply(toy, mutated_tree(SOURCE, by_key["over: Gt->GtE: x > LIMIT#1"])) >= 1
    assert over(3) is True  # 3 >= 3 now
    assert patch.apply(toy, mutated_tree(SOURCE, by_key["<module>: number+1: 3#1"])) >= 1
    assert toy.LIMIT == 4 and over(4) is False and over(5) is True  # the constant changed, over is back to >
    with pytest.raises(ValueError):
        box.grow(-5)
    assert patch.apply(toy, mutated_tree(SOURCE, by_key['Box.grow: delete statement: raise ValueError("negative")#1']))
    assert box.grow(-5) == -4


def test_the_score_leaves_out_equivalent_mutants():
    ms = mutants(SOURCE)
    statuses = ["killed"] * 9 + ["timeout", "survived", "survived", "not covered"]
    run = ModuleRun("uniroute.routers.rule", [Outcome(m, s) for m, s in zip(ms, statuses, strict=True)])
    summary = summarise(run, {ms[11].key: "why"})
    assert (summary["mutants"], summary["killed"], summary["survived"], summary["equivalent"]) == (13, 10, 2, 1)
    assert summary["score"] == round(10 / 12, 4)
    assert [s["key"] for s in summary["survivors"]] == [ms[10].key, ms[12].key]
