"""`make test-fast`: the tests a change's files map to, for the loop while working (CI runs the whole suite).

A changed test file runs itself; a changed module runs the tests that mirror it (`uniroute/pipeline/pool/onboard.py`
-> `tests/pipeline/pool/test_onboard*.py`) and every test file that imports it; a changed SQL file runs the tests
that name it; anything else runs the architecture test. The change is what differs from `main` (committed or not)
plus untracked files; `python -m tests.changed --list` prints the selection instead of running it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"
ALWAYS = "tests/test_architecture.py"


def _git(*args: str) -> list[str]:
    done = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=False)
    return [line for line in done.stdout.splitlines() if line.strip()] if done.returncode == 0 else []


def changed_files(base: str = "main") -> list[str]:
    """Paths (relative to the repository) that differ from `base`'s merge base, committed, staged or not, or new."""
    merge_base = _git("merge-base", "HEAD", base)
    against = merge_base[0] if merge_base else "HEAD"
    names = _git("diff", "--name-only", against) + _git("ls-files", "--others", "--exclude-standard")
    return sorted({n for n in names if (REPO / n).exists()})


def _module_names(path: str) -> list[str]:
    """The dotted names a test file would import the module at `path` by."""
    parts = Path(path).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    dotted = ".".join(parts)
    parent, _, leaf = dotted.rpartition(".")
    return [dotted, f"from {parent} import {leaf}"] if parent else [dotted]


def _test_texts() -> dict[str, str]:
    return {str(p.relative_to(REPO)): p.read_text(errors="replace") for p in sorted(TESTS.rglob("test_*.py"))}


def selected_tests(changed: list[str]) -> list[str]:
    """The test files that guard `changed`, sorted; the architecture test whenever nothing more specific maps."""
    texts = _test_texts()
    chosen: set[str] = set()
    for path in changed:
        p = Path(path)
        if p.parts[0] == "tests" and p.name.startswith("test_") and p.suffix == ".py":
            chosen.add(path)
        elif p.suffix == ".py" and p.parts[0] in ("uniroute", "flows", "deployments", "benchmarks"):
            inner = p.parts[1:-1] if p.parts[0] == "uniroute" else p.parts[:-1]
            mirror = TESTS.joinpath(*inner)
            if p.stem != "__init__" and mirror.is_dir():
                chosen.update(str(t.relative_to(REPO)) for t in mirror.glob(f"test_{p.stem}*.py"))
            names = _module_names(path)
            chosen.update(t for t, text in texts.items() if any(n in text for n in names))
        elif p.suffix == ".sql":
            chosen.update(t for t, text in texts.items() if p.stem in text)
    return sorted(chosen) or [ALWAYS]


def main(argv: list[str]) -> int:
    selected = selected_tests(changed_files())
    if "--list" in argv:
        print("\n".join(selected))
        return 0
    print(f"make test-fast: {len(selected)} test files for the change against main (CI runs them all)", flush=True)
    command = [sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "loadgroup", "-m", "not slow", *selected]
    code = subprocess.run(command, cwd=REPO, check=False).returncode
    return 0 if code == 5 else code  # 5: every selected test is marked slow, none left to run


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
