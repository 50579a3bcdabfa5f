"""Run every mutant of a core module against that module's fast tests; one forked child per mutant.

Why our own runner rather than mutmut or cosmic-ray: both re-run pytest from scratch per mutant (cosmic-ray) or
copy the tree to mutants/ and first trace the whole suite (mutmut 3), and here a fresh pytest costs ~3 s of
imports (torch, DuckDB, Prefect) before the first test and the full suite 12 minutes on two shared cores. This
runner imports everything and collects the tests once in the parent, then forks one child per mutant that
patches the module in memory (patch.py) and runs the selection with -x, so a killed mutant costs the time of its
first failing test. The baseline run traces which test executes which line of the module; a mutant inside a
function then runs only the tests that executed its statement (none: it survives as "not covered", unrun).
Limits: a subprocess a test starts runs the file on disk, unmutated.
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import signal
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tools.mutation import patch
from tools.mutation.operators import Mutant, mutants, mutated_tree

PYTEST_ARGS = ["-q", "-x", "-p", "no:cacheprovider", "-o", "addopts=", "--no-header", "-W", "ignore"]


@dataclass
class Outcome:
    mutant: Mutant
    status: str  # killed | survived | timeout | not covered | no change | error
    seconds: float = 0.0


@dataclass
class ModuleRun:
    module: str
    outcomes: list[Outcome] = field(default_factory=list)
    baseline_seconds: float = 0.0


def _statement_spans(source: str) -> dict[int, tuple[int, int, bool]]:
    """line -> (first, last, in_function) of the innermost statement holding each line of the file."""
    spans: dict[int, tuple[int, int, bool]] = {}

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            if isinstance(child, ast.stmt):
                for line in range(child.lineno, (child.end_lineno or child.lineno) + 1):
                    spans[line] = (child.lineno, child.end_lineno or child.lineno, in_function)
            visit(child, inner)

    visit(ast.parse(source), False)
    return spans


def _in_child(work, timeout: float) -> tuple[int, float]:
    """Fork; the child runs work() with its output silenced and exits with its int; (exit code, seconds).
    A child still running after timeout is killed and reported as -1."""
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:  # the child: never return into the parent's code
        code = 70
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            code = int(work())
        finally:
            os._exit(code)
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status), time.monotonic() - start
        if time.monotonic() - start > timeout:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return -1, time.monotonic() - start
        time.sleep(0.02)


class _Durations:
    """A pytest plugin keeping each test's time (setup + call + teardown) by node id, and the id of the test
    running now (so the tracer can say which test ran which line)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.current: str | None = None

    def pytest_runtest_logstart(self, nodeid, location) -> None:
        self.current = nodeid

    def pytest_runtest_logreport(self, report) -> None:
        self.seconds[report.nodeid] = self.seconds.get(report.nodeid, 0.0) + report.duration


def _baseline(tests: list[str], path: Path, lines_file: Path) -> int:
    """The child of the baseline run: the selection under a line tracer for path; the lines it ran, which test
    ran each (setup and teardown included: a module-scoped fixture's lines go to the first test using it) and each
    test's time written to lines_file."""
    target, seen, durations = str(path), set(), _Durations()
    by_test: dict[str, set[int]] = {}

    def local(frame, event, arg):
        if event == "line":
            seen.add(frame.f_lineno)
            by_test.setdefault(durations.current or "", set()).add(frame.f_lineno)
        return local

    def tracer(frame, event, arg):
        return local if frame.f_code.co_filename == target else None

    sys.settrace(tracer)
    threading.settrace(tracer)
    code = pytest.main([*PYTEST_ARGS, *tests], plugins=[durations])
    sys.settrace(None)
    lines_file.write_text(json.dumps({"lines": sorted(seen), "durations": durations.seconds,
                                      "by_test": {t: sorted(lines) for t, lines in by_test.items()}}))
    return int(code)


def _run_mutant(module_name: str, source: str, mutant: Mutant, tests: list[str]) -> int:
    """The child of one mutant: patch, then the selection; exit 0 survived, 1+ killed, 99 nothing changed."""
    if patch.apply(importlib.import_module(module_name), mutated_tree(source, mutant)) == 0:
        return 99
    return int(pytest.main([*PYTEST_ARGS, *tests]))


def run_module(module_name: str, tests: list[str], report=print, only: set[str] | None = None,
               equivalent: frozenset[str] = frozenset()) -> ModuleRun:
    """Every mutant of module_name against tests (paths or pytest arguments relative to the repository).

    only: run just these keys (the survivors of the last run) and count every other mutant as killed, as it
    was then; valid while the module's source is unchanged since that run. Of those, the equivalent ones are
    not run again: they survive by definition."""
    module = importlib.import_module(module_name)
    path = Path(module.__file__)
    source = path.read_text()
    # Import the tests (and what they import) once, here, so each child starts at the first test.
    with open(os.devnull, "w") as devnull:
        saved = sys.stdout
        sys.stdout = devnull
        try:
            pytest.main([*PYTEST_ARGS, "--collect-only", *tests])
        finally:
            sys.stdout = saved
    with tempfile.TemporaryDirectory() as tmp:
        lines_file = Path(tmp) / "lines.json"
        code, seconds = _in_child(lambda: _baseline(tests, path, lines_file), timeout=600)
        if code != 0:
            raise SystemExit(f"{module_name}: its tests fail before any mutation (pytest exit {code}): "
                             f"python -m pytest {' '.join(tests)}")
        traced = json.loads(lines_file.read_text())
        executed = set(traced["lines"])
    # Mutants then run the tests quickest first: with -x a killed mutant costs only up to its first failure.
    options = [a for a in tests if a.startswith("-")]
    tests = options + sorted(traced["durations"], key=traced["durations"].get)
    by_test = {t: set(lines) for t, lines in traced["by_test"].items() if t in traced["durations"]}
    run = ModuleRun(module_name, baseline_seconds=round(seconds, 2))
    timeout = max(10.0, 3 * seconds + 5)
    spans = _statement_spans(source)
    todo = mutants(source)
    report(f"{module_name}: {len(todo)} mutants, tests take {seconds:.1f} s (timeout {timeout:.0f} s)")
    for i, mutant in enumerate(todo, 1):
        if only is not None and mutant.key not in only:
            run.outcomes.append(Outcome(mutant, "killed"))
            continue
        if only is not None and mutant.key in equivalent:
            run.outcomes.append(Outcome(mutant, "survived"))
            continue
        first, last, in_function = spans.get(mutant.line, (mutant.line, mutant.line, False))
        if in_function and not executed.intersection(range(first, last + 1)):
            run.outcomes.append(Outcome(mutant, "not covered"))
            report(f"  [{i}/{len(todo)}] not covered: line {mutant.line}: {mutant.key}")
            continue
        # A mutant inside a function only acts when its statement runs, so only the tests that ran it can see it
        # (run quickest first, as above); a module-level one (a constant, a default, a decorator) may act on any
        # test and gets them all. Fewer tests can only let more mutants survive, never kill one wrongly.
        selection = tests
        if in_function:
            span = set(range(first, last + 1))
            selection = options + [t for t in tests if t in by_test and by_test[t] & span]
            if len(selection) == len(options):  # ran only while the tests were collected, never by a test
                run.outcomes.append(Outcome(mutant, "not covered"))
                report(f"  [{i}/{len(todo)}] not covered: line {mutant.line}: {mutant.key}")
                continue
        code, seconds = _in_child(lambda m=mutant, sel=selection: _run_mutant(module_name, source, m, sel),
                                  timeout)
        # pytest's internal error, usage error (a test id not found) and "no tests collected" say the run itself
        # went wrong, not that a test caught the mutant: reported, and counted as survived until rerun.
        status = {0: "survived", 99: "no change", -1: "timeout", 3: "error", 4: "error", 5: "error"}.get(code, "killed")
        run.outcomes.append(Outcome(mutant, status, round(seconds, 2)))
        if status != "killed":
            report(f"  [{i}/{len(todo)}] {status}: line {mutant.line}: {mutant.key}")
    return run
