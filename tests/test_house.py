"""House habits checked on the source: comments say why instead of citing an issue, benchmarks/ holds measurements
only, and settled decisions are records in docs/decisions/ with the same four sections."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

from benchmarks.runner import BENCHMARKS, ON_DEMAND

REPO = Path(__file__).resolve().parents[1]
CODE_FOLDERS = ("uniroute", "flows", "deployments", "benchmarks", "tests", "tools")
# "issue" or "issues" before a number, or "#" glued to one: a tracker's number says nothing once the tracker is gone
# (the forms are in test_the_citation_check_sees_each_form).
ISSUE_CITATION = re.compile(r"\b[Ii]ssues?\s*#?\d+|(?<![\w&#])#\d+\b")
DECISIONS = REPO / "docs" / "decisions"
RECORD_SECTIONS = ("## Context", "## Options measured", "## Decision", "## Consequences")
MIN_RECORDS = 6


def _python_files() -> list[Path]:
    return sorted(p for folder in CODE_FOLDERS for p in (REPO / folder).rglob("*.py"))


def comments_and_docstrings(source: str) -> list[tuple[int, str]]:
    """(line, text) of every comment and every module, class and function docstring of a Python source."""
    found = [(tok.start[0], tok.string.lstrip("#"))
             for tok in tokenize.generate_tokens(io.StringIO(source).readline) if tok.type == tokenize.COMMENT]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node, clean=False)
            if doc is not None:
                found.append((node.body[0].lineno, doc))
    return found


def issue_citations(source: str) -> list[str]:
    """The comments and docstrings of a source that cite an issue number, as 'line: match'."""
    return [f"{line}: {match.group(0)!r}" for line, text in comments_and_docstrings(source)
            for match in ISSUE_CITATION.finditer(text)]


@pytest.mark.parametrize("path", _python_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_no_comment_or_docstring_cites_an_issue_number(path: Path) -> None:
    cited = issue_citations(path.read_text())
    assert not cited, (f"{path.relative_to(REPO)} cites an issue number at {cited}: say the why itself, or cite a "
                       "decision record (docs/decisions/NNNN-name.md)")


def test_sql_and_make_comments_cite_no_issue_number() -> None:
    comments = [(p, line) for p in sorted((REPO / "sql").rglob("*.sql"))
                for line in p.read_text().splitlines() if "--" in line]
    comments += [(REPO / "Makefile", line) for line in (REPO / "Makefile").read_text().splitlines() if "#" in line]
    cited = [f"{p.relative_to(REPO)}: {line.strip()}" for p, line in comments if ISSUE_CITATION.search(line)]
    assert not cited, f"comments citing an issue number: {cited}"


@pytest.mark.parametrize("text", ["# the spill (issue 22)", "# as #28 asked", '"""Issues 10 and 11: why."""'])
def test_the_citation_check_sees_each_form(text: str) -> None:
    assert issue_citations(text + "\n")


@pytest.mark.parametrize("text", ['KEY = "over: Gt->GtE: x > LIMIT#1"  # a mutant key, not a comment\n',
                                  "# one task per 2,048 prompts; &#39; is an HTML entity\n"])
def test_the_citation_check_leaves_strings_and_numbers_alone(text: str) -> None:
    assert not issue_citations(text)


def _module(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _references(path: Path) -> set[str]:
    """Modules a file imports (at any depth) or launches by name ('python:benchmarks.x', '-m benchmarks.x')."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names.update(re.findall(r"(?:python:|-m )(benchmarks(?:\.\w+)+)", node.value))
    return names


def measurement_modules() -> dict[str, Path]:
    """Every module of benchmarks/ but packages and the runner itself."""
    return {_module(p): p for p in sorted((REPO / "benchmarks").rglob("*.py"))
            if p.name != "__init__.py" and p.name != "runner.py"}


def unreached(modules: dict[str, Path], listed: tuple[str, ...]) -> list[str]:
    """The modules no listed measurement imports or launches, directly or through another reached module."""
    todo = [f"benchmarks.{name}" for name in listed]
    reached: set[str] = set()
    while todo:
        module = todo.pop()
        if module in reached or module not in modules:
            continue
        reached.add(module)
        todo.extend(_references(modules[module]))
    return sorted(set(modules) - reached)


def test_every_listed_measurement_exists_and_runs_as_a_module() -> None:
    modules = measurement_modules()
    for name in BENCHMARKS + ON_DEMAND:
        path = modules.get(f"benchmarks.{name}")
        assert path is not None, f"benchmarks/runner.py lists {name}, which is no module of benchmarks/"
        assert 'if __name__ == "__main__":' in path.read_text(), f"{path.relative_to(REPO)} cannot run as -m"
    assert not set(BENCHMARKS) & set(ON_DEMAND), "a measurement is listed twice in benchmarks/runner.py"


def test_every_benchmarks_module_is_a_measurement() -> None:
    strays = unreached(measurement_modules(), BENCHMARKS + ON_DEMAND)
    assert not strays, (
        f"{strays}: not reached from benchmarks/runner.py's BENCHMARKS or ON_DEMAND. A measurement is listed there; "
        "a page generator belongs in tools/pages/, a closed study in a decision record (docs/decisions/)")


def test_the_reachability_rule_finds_a_stray_and_follows_launches(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("from benchmarks.b import x\nARGV = ['python:benchmarks.c', '--n', '1']\n")
    (tmp_path / "b.py").write_text("x = 1\n")
    (tmp_path / "c.py").write_text("import json\n")
    (tmp_path / "pilot.py").write_text("import numpy\n")
    modules = {f"benchmarks.{p.stem}": p for p in sorted(tmp_path.glob("*.py"))}
    assert unreached(modules, ("a",)) == ["benchmarks.pilot"]


def test_benchmarks_never_import_tools() -> None:
    # Pages read what measurements wrote, never the other way: a measurement does not depend on how it is shown.
    for path in sorted((REPO / "benchmarks").rglob("*.py")):
        imported = {n for n in _references(path) if n == "tools" or n.startswith("tools.")}
        assert not imported, f"{path.relative_to(REPO)} imports {sorted(imported)}"


def _records() -> list[Path]:
    return sorted(DECISIONS.glob("[0-9][0-9][0-9][0-9]-*.md"))


def test_decision_records_have_their_sections_and_are_listed() -> None:
    records = _records()
    assert len(records) >= MIN_RECORDS, f"docs/decisions/ holds {len(records)} records"
    index = (DECISIONS / "README.md").read_text()
    numbers = [p.name[:4] for p in records]
    assert len(numbers) == len(set(numbers)), f"two records share a number: {numbers}"
    for path in records:
        text = path.read_text()
        assert text.startswith(f"# {path.name[:4]}. "), f"{path.name}: the title starts with its number"
        positions = [text.find(section + "\n") for section in RECORD_SECTIONS]
        assert -1 not in positions and positions == sorted(positions), (
            f"{path.name}: needs the sections {', '.join(RECORD_SECTIONS)}, in that order")
        assert f"]({path.name})" in index, f"docs/decisions/README.md does not list {path.name}"


def test_every_cited_decision_record_exists() -> None:
    cited = {(p, m) for p in _python_files() for m in re.findall(r"docs/decisions/(\d{4}-[\w-]+\.md)", p.read_text())}
    missing = sorted(f"{p.relative_to(REPO)}: {m}" for p, m in cited if not (DECISIONS / m).exists())
    assert not missing, f"comments cite decision records that do not exist: {missing}"
