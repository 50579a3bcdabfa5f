"""`make lint` and the pre-commit hooks run the same checks, `make test` lints first, and the type checker's
configuration and the code's ignores stay narrow (no blanket ignore of our modules, every ignore names its code
and says why)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
TYPE_IGNORE = re.compile(r"#\s*type:\s*ignore(?P<codes>\[[a-z-]+(?:,\s*[a-z-]+)*\])?(?P<rest>.*)$")


def _recipe(target: str) -> tuple[list[str], list[str]]:
    """(prerequisites, commands) of a Makefile target, $(BIN) spelt as the .venv path it stands for."""
    lines = (ROOT / "Makefile").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{target}:"))
    prerequisites = lines[start].split(":", 1)[1].split()
    commands = []
    for line in lines[start + 1:]:
        if not line.startswith("\t"):
            break
        commands.append(line.strip().lstrip("@").replace("$(BIN)", ".venv/bin"))
    return prerequisites, commands


def _lint_commands() -> list[str]:
    """What `make lint` runs: its own commands, a sub-make's targets (run side by side) replaced by theirs."""
    targets = {line.split(":", 1)[0] for line in (ROOT / "Makefile").read_text().splitlines()
               if re.match(r"[a-z-]+:", line)}
    commands = []
    for command in _recipe("lint")[1]:
        if command.startswith("$(MAKE)"):
            commands += [c for word in command.split()[1:] if word in targets for c in _recipe(word)[1]]
        else:
            commands.append(command)
    return commands


def test_pre_commit_runs_what_make_lint_runs():
    lint = _lint_commands()
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    hooks = [hook for repo in config["repos"] for hook in repo["hooks"]]
    assert [hook["entry"] for hook in hooks] == lint
    assert all(hook["language"] == "system" and hook["pass_filenames"] is False for hook in hooks)
    assert [command.split()[0].rsplit("/", 1)[-1] for command in lint] == ["ruff", "mypy", "sqlfluff"]


def test_make_test_lints_first():
    prerequisites, commands = _recipe("test")
    assert prerequisites == ["lint"]
    assert commands == ["PYTHONDONTWRITEBYTECODE= .venv/bin/python -m pytest -q -n 2 --dist loadgroup"]


def test_type_checker_ignores_no_module_of_ours():
    mypy = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert mypy["files"] == ["uniroute", "flows"] and mypy["check_untyped_defs"] is True
    assert "ignore_errors" not in mypy and "ignore_missing_imports" not in mypy
    for override in mypy.get("overrides", []):
        # Third-party packages only: untyped ones' names are Any (ignore_missing_imports), and huge typed ones that
        # we touch at one boundary are not followed (follow_imports = "skip": their names are Any too).
        assert set(override) in ({"module", "ignore_missing_imports"}, {"module", "follow_imports"}), override
        assert override.get("follow_imports", "skip") == "skip", override
        assert not [m for m in override["module"] if m.split(".")[0] in {"uniroute", "flows"}]


def test_every_type_ignore_names_its_code_and_why():
    bad = []
    for path in sorted([*(ROOT / "uniroute").rglob("*.py"), *(ROOT / "flows").rglob("*.py")]):
        lines = path.read_text().splitlines()
        for number, line in enumerate(lines, start=1):
            found = TYPE_IGNORE.search(line)
            if found is None:
                continue
            # The reason: a comment after the ignore, or a comment line just above (one for a pair of lines).
            above = [lines[i].strip() for i in range(max(number - 3, 0), number - 1)]
            reason = found["rest"].strip().startswith("#") or any(a.startswith("#") for a in above)
            if found["codes"] is None or not reason:
                bad.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not bad, "a type: ignore names its error code and says why:\n" + "\n".join(bad)
