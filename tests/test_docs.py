"""The reference pages are complete: every CLI command and option is in docs/cli.md, every view users query in
docs/sql.md, every UNIROUTE_* setting in docs/settings.md; and the README stays a front door."""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer.main

from uniroute.settings import Settings

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
# Views the build reads to select its own prompts: a definition shared by its queries, not a question users ask.
INTERNAL_VIEWS = {"build_costed_models", "build_prompt_ids"}
# Created by the store's connection in Python (uniroute/store/embeddings.py), not by a SQL file.
PYTHON_VIEWS = {"embeddings"}
_VIEW = re.compile(r"create\s+(?:or\s+replace\s+)?(?:temp(?:orary)?\s+)?view\s+(?:if\s+not\s+exists\s+)?(\w+)", re.I)


def _commands(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every leaf command of a click group with its path of names (`models set-price`)."""
    if hasattr(command, "list_commands"):
        context = command.make_context(command.name or "uniroute", [], resilient_parsing=True)
        for name in command.list_commands(context):
            yield from _commands(command.get_command(context, name), (*path, name))
    else:
        yield path, command


def cli_commands() -> dict[str, list[str]]:
    """Each command's name (`uniroute models list`) -> its options (both spellings of a flag) and arguments."""
    app = importlib.import_module("uniroute.cli.app")
    app._load(*app.MODULE_ORDER)
    root = typer.main.get_command(app.app)
    found: dict[str, list[str]] = {"uniroute": [o for p in root.params for o in (*p.opts, *p.secondary_opts)]}
    for path, command in _commands(root):
        names = []
        for param in command.params:
            if param.param_type_name == "argument":
                names.append(str(param.name).upper())
            else:
                names.extend(o for o in (*param.opts, *param.secondary_opts) if o != "--help")
        found["uniroute " + " ".join(path)] = names
    return found


def sections(page: str, prefix: str) -> dict[str, str]:
    """A page's `## `/`### ` sections whose heading starts with prefix: heading text (backticks dropped) -> body."""
    parts = re.split(r"^(#{2,3} .*)$", page, flags=re.M)
    found = {}
    for heading, body in zip(parts[1::2], parts[2::2], strict=True):
        title = heading.lstrip("#").strip().strip("`")
        if title.startswith(prefix):
            found[title] = body
    return found


def missing_from_cli_page(page: str, commands: dict[str, list[str]]) -> list[str]:
    """Commands without their own section in the page, and options or arguments missing from their section."""
    own = sections(page, "uniroute ")
    missing = []
    for command, names in commands.items():
        body = page if command == "uniroute" else own.get(command)
        if body is None:
            missing.append(command)
            continue
        missing.extend(f"{command} {name}" for name in names
                       if not re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", body))
    return missing


def user_views() -> set[str]:
    """The views of the SQL files (schema, migrations, per-connection) a user can query."""
    files = [*sorted((REPO / "sql").glob("schema/*.sql")), *sorted((REPO / "sql").glob("migrations/*.sql")),
             *sorted((REPO / "sql").glob("connection/*.sql"))]
    views = {name.lower() for path in files for name in _VIEW.findall(path.read_text())}
    return (views - INTERNAL_VIEWS) | PYTHON_VIEWS


def missing_from_sql_page(page: str, views: set[str]) -> list[str]:
    """Views without a table row of their own (`| \\`view\\` |`) in the page."""
    listed = set(re.findall(r"^\| `(\w+)` \|", page, flags=re.M))
    return sorted(views - listed)


def settings_names() -> set[str]:
    return {f"UNIROUTE_{name.upper()}" for name in Settings.model_fields}


def missing_from_settings_page(page: str, names: set[str]) -> list[str]:
    """Settings without a table row of their own (`| \\`UNIROUTE_X\\` |`) in the page."""
    listed = set(re.findall(r"^\| `(UNIROUTE_\w+)` \|", page, flags=re.M))
    return sorted(names - listed)


@pytest.fixture(scope="module")
def commands() -> dict[str, list[str]]:
    return cli_commands()


def test_every_command_and_option_is_in_the_cli_page(commands) -> None:
    assert len(commands) >= 20 and "uniroute models set-price" in commands
    assert missing_from_cli_page((DOCS / "cli.md").read_text(), commands) == []


def test_the_cli_check_fails_on_a_missing_command_or_option(commands) -> None:
    page = (DOCS / "cli.md").read_text()
    without_retire = re.sub(r"^### `uniroute retire`$", "### retiring", page, flags=re.M)
    assert missing_from_cli_page(without_retire, commands) == ["uniroute retire"]
    replay = sections(page, "uniroute replay")["uniroute replay"]
    assert missing_from_cli_page(page.replace(replay, replay.replace("--since", "--from-time")), commands) == [
        "uniroute replay --since"]
    # An option named in another command's section does not count for this one (--no-onboard is inbox's).
    inbox = sections(page, "uniroute inbox")["uniroute inbox"]
    assert missing_from_cli_page(page.replace(inbox, inbox.replace("--no-onboard", "--skip")), commands) == [
        "uniroute inbox --no-onboard"]


def test_every_user_view_is_in_the_sql_page() -> None:
    views = user_views()
    assert {"current_routing_table", "routing_decisions", "traffic_drift", "embeddings"} <= views
    assert missing_from_sql_page((DOCS / "sql.md").read_text(), views) == []


def test_the_sql_check_fails_on_a_missing_view() -> None:
    page = (DOCS / "sql.md").read_text()
    assert missing_from_sql_page(page.replace("| `publication_diff` |", "| publication diff |"), user_views()) == [
        "publication_diff"]


def test_every_setting_is_in_the_settings_page() -> None:
    names = settings_names()
    assert {"UNIROUTE_HOME", "UNIROUTE_BUILD_EMBEDDER", "UNIROUTE_SHADOW_ALPHA"} <= names
    assert missing_from_settings_page((DOCS / "settings.md").read_text(), names) == []


def test_the_settings_check_fails_on_a_missing_setting() -> None:
    page = (DOCS / "settings.md").read_text()
    assert missing_from_settings_page(page.replace("| `UNIROUTE_SEED` |", "| seed |"), settings_names()) == [
        "UNIROUTE_SEED"]


def guarantee_rows(page: str) -> list[tuple[str, list[str]]]:
    """The guarantees table's rows: the guarantee and the tests (or benchmark) its `shown by` cell names."""
    rows = re.findall(r"^\| (?!guarantee \|)(?!---)(.*) \| ([^|]*) \|$", page, flags=re.M)
    return [(claim, re.findall(r"`([^`]+)`", shown)) for claim, shown in rows]


def missing_tests(rows: list[tuple[str, list[str]]]) -> list[str]:
    """Rows naming no test, and named test files or folders that do not exist (a bare file name anywhere in tests/)."""
    names = {p.name for p in (REPO / "tests").rglob("*.py")}
    missing = []
    for claim, shown in rows:
        if not any(s.startswith("tests/") or s.startswith("test_") for s in shown):
            missing.append(claim[:60])
        missing.extend(s for s in shown if not ((REPO / s).exists() if "/" in s else s in names))
    return missing


def test_every_guarantee_names_a_test_that_exists() -> None:
    rows = guarantee_rows((DOCS / "guarantees.md").read_text())
    assert len(rows) >= 23  # as many as the README held when they moved here
    assert missing_tests(rows) == []
    assert missing_tests([("a claim", ["tests/robustness/test_gone.py"]), ("unshown", ["uniroute/x.py"])]) == [
        "tests/robustness/test_gone.py", "unshown", "uniroute/x.py"]


def test_the_readme_is_a_front_door() -> None:
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 150 and len(readme.encode()) <= 12 * 1024
    assert max(len(line) for line in readme.splitlines()) <= 200
    assert "make test" in readme and "make run" in readme  # CI runs `make test` (.ci/run)


@pytest.mark.parametrize("page", sorted(p.relative_to(REPO) for p in [REPO / "README.md", *DOCS.rglob("*.md")]),
                         ids=str)
def test_relative_links_resolve(page: Path) -> None:
    """A link to a file of the repository names one that exists, and a `#section` a heading of that file."""
    source = REPO / page
    for target in re.findall(r"\]\(([^)\s]+)\)", source.read_text()):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        linked = (source.parent / path).resolve() if path else source
        assert linked.exists(), f"{page}: link to {target}: no such file"
        if anchor and linked.suffix == ".md":
            assert anchor in _anchors(linked.read_text()), f"{page}: link to {target}: no such heading"


def _anchors(text: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces as hyphens."""
    headings = re.findall(r"^#{1,6} (.*)$", text, flags=re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}
