"""The mutation runner's own parts (tools/mutation): which mutants a file has, that a mutant reaches the
functions other modules imported by name, and the score it reports."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from tools.mutation import patch
from tools.mutation.__main__ import MODULES, summarise
from tools.mutation.operators import mutants, mutated_tree
from tools.mutation.runner import ModuleRun, Outcome, run_module

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


# ---- run_module's per-line test selection, on a toy module and its toy tests ------------------------------
SELECTED = '''
def double(x):
    return x * 2


def triple(x):
    return x * 3


def orphan(x):
    return x - 1
'''
SELECTED_TESTS = '''
import toy_selected


def test_double():
    assert toy_selected.double(2) == 4


def test_triple_runs():  # covers triple's line, checks nothing: triple's mutants survive it
    toy_selected.triple(0)


def test_tripwire():
    """Covers double's line only, and fails whenever triple is not the file's own triple: it kills triple's
    mutants exactly when it is run against them, which the selection must not do."""
    toy_selected.double(1)
    fresh = {}
    exec(compile(open(toy_selected.__file__).read(), toy_selected.__file__, "exec"), fresh)
    assert toy_selected.triple.__code__ == fresh["triple"].__code__
'''


def test_a_mutant_runs_only_the_tests_that_cover_its_line_and_an_uncovered_line_is_reported(tmp_path, monkeypatch):
    (tmp_path / "toy_selected.py").write_text(SELECTED)
    (tmp_path / "test_toy_selected.py").write_text(SELECTED_TESTS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)  # the runner's node ids are relative to where it runs (the repository, for real)
    monkeypatch.setitem(MODULES, "toy_selected", ["test_toy_selected.py"])
    try:
        run = run_module("toy_selected", MODULES["toy_selected"], report=lambda line: None)
    finally:
        for name in ("toy_selected", "test_toy_selected"):
            sys.modules.pop(name, None)
    status = {o.mutant.key: o.status for o in run.outcomes}
    # double's line: test_double (and the tripwire) ran it, and test_double kills each of its mutants.
    assert {k: s for k, s in status.items() if k.startswith("double")} == {
        "double: Mult->Div: x * 2#1": "killed", "double: number+1: 2#1": "killed",
        "double: delete statement: return x * 2#1": "killed"}
    # triple's line: run against test_triple_runs alone (it survives); the tripwire, run too, would kill it.
    assert {k: s for k, s in status.items() if k.startswith("triple")} == {
        "triple: Mult->Div: x * 3#1": "survived", "triple: number+1: 3#1": "survived",
        "triple: delete statement: return x * 3#1": "survived"}
    # orphan's line: no test ran it, so its mutants are reported as such, neither killed nor survived.
    assert {k: s for k, s in status.items() if k.startswith("orphan")} == {
        "orphan: Sub->Add: x - 1#1": "not covered", "orphan: number+1: 1#1": "not covered",
        "orphan: delete statement: return x - 1#1": "not covered"}
    summary = summarise(run, {})
    assert (summary["killed"], summary["survived"]) == (3, 6)
    assert sum(s["status"] == "not covered" for s in summary["survivors"]) == 3


def test_a_mutant_whose_tests_cannot_be_found_is_an_error_not_a_kill(tmp_path, monkeypatch):
    """The children run the baseline's test ids, relative to where the runner started: from elsewhere pytest
    finds none of them (its usage error, exit 4), which must not read as a test catching the mutant."""
    (tmp_path / "toy_selected.py").write_text(SELECTED)
    (tmp_path / "test_toy_selected.py").write_text(SELECTED_TESTS)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    try:
        run = run_module("toy_selected", [str(tmp_path / "test_toy_selected.py")], report=lambda line: None,
                         only={"double: number+1: 2#1"})
    finally:
        for name in ("toy_selected", "test_toy_selected"):
            sys.modules.pop(name, None)
    assert {o.mutant.key: o.status for o in run.outcomes}["double: number+1: 2#1"] == "error"
