"""What the tests need from their surroundings, and no silent skips in CI.

Outside CI a missing shared dataset or pinned dependency skips the tests that need it, naming it (the `-ra`
summary lists every skip with its reason). With CI=true the run fails instead, at once, with ONE line naming
what is missing: a CI run that quietly skipped the dataset tests would pass without testing them. Only
genuinely optional extras (`optional`) may skip in CI, and the summary names them too.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import shutil
from pathlib import Path
from types import ModuleType
from typing import NoReturn

import pytest

# Exit status of a CI run that cannot test everything (pytest's own codes are 0-5).
MISSING_EXIT_CODE = 6
# Pinned dependencies (requirements.lock) that some tests import; CI checks them before collecting anything.
PINNED_MODULES = ("mlflow", "prefect", "duckdb", "dask", "distributed", "sklearn", "onnxruntime", "hypothesis",
                  "xdist")
# Programs the suite runs (the Makefile's targets); CI needs them like any dependency.
PROGRAMS = ("make",)
# needs.module("NAME") or needs.installed("NAME") in a test file: CI checks NAME before collecting.
_MODULE_CALL = re.compile(r"^\s*(?:\w+\s*=\s*)?needs\.(?:module|installed)\(\s*['\"]([\w.]+)['\"]\s*\)", re.MULTILINE)


def in_ci() -> bool:
    """Whether this is a CI run (CI=true, as every CI service sets it)."""
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def missing(what: str) -> NoReturn:
    """Skip (naming what is missing) outside CI; in CI end the whole run with one line."""
    if in_ci():
        pytest.exit(f"CI=true and {what} is missing: CI runs every test, none may skip", returncode=MISSING_EXIT_CODE)
    pytest.skip(f"{what} is missing", allow_module_level=True)


def folder(path: Path, what: str) -> Path:
    """path if it exists, else `missing`."""
    if not Path(path).exists():
        missing(f"{what} ({path})")
    return Path(path)


def module(name: str) -> ModuleType:
    """A pinned dependency, imported; `missing` when it cannot be (use instead of pytest.importorskip)."""
    try:
        return importlib.import_module(name)
    except ImportError:
        _missing_pinned(name)


def installed(name: str) -> None:
    """A pinned dependency the test file does not use itself at import, found without importing it (`module`
    imports it: LiteLLM costs ~5 CPU-seconds, paid at collection by every xdist worker, running its tests or not)."""
    if _find_spec(name) is None:
        _missing_pinned(name)


def _missing_pinned(name: str) -> NoReturn:
    missing(f"the pinned dependency {name!r} (pip install -c requirements.lock -e '.[dev]')")


def program(name: str) -> str:
    """A program on PATH; `missing` when it is not."""
    found = shutil.which(name)
    if found is None:
        missing(f"the program {name!r} on PATH")
    return found


def optional(name: str, extra: str) -> ModuleType:
    """A genuinely optional extra: skipped when absent, in CI too, with a reason naming the extra."""
    try:
        return importlib.import_module(name)
    except ImportError:
        pytest.skip(f"optional extra {extra!r} not installed ({name})", allow_module_level=True)


def named_modules(roots: list[Path]) -> list[str]:
    """Modules that test files under roots (files or folders) ask for with needs.module("NAME")."""
    files = [f for r in roots for f in ([r] if r.is_file() else sorted(r.rglob("*.py")))]
    return sorted({m for f in files for m in _MODULE_CALL.findall(f.read_text(errors="replace"))})


def ci_problems(shared_datasets: Path, modules: list[str], programs: tuple[str, ...] = PROGRAMS) -> list[str]:
    """What a CI run lacks: the shared datasets folder, pinned modules, programs (empty when complete)."""
    problems = [] if Path(shared_datasets).exists() else [f"the shared datasets ({shared_datasets})"]
    problems += [f"the pinned dependency {m!r}" for m in modules if _find_spec(m) is None]
    problems += [f"the program {p!r} on PATH" for p in programs if shutil.which(p) is None]
    return problems


def _find_spec(name: str):
    try:
        return importlib.util.find_spec(name)
    except ImportError:  # a parent package is missing
        return None


def check_ci(shared_datasets: Path, roots: list[Path]) -> None:
    """In CI, refuse to start (one line, naming everything missing) unless every test can run: checked before
    collection, so a missing module fails the run before any test file imports it."""
    if not in_ci():
        return
    problems = ci_problems(shared_datasets, sorted({*PINNED_MODULES, *named_modules(roots)}))
    if problems:
        raise pytest.UsageError(f"CI=true and {', '.join(problems)} missing: CI runs every test, none may skip")
