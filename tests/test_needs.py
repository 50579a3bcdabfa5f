"""No silent skips in CI: with CI=true a missing shared dataset or pinned dependency fails the run with one line
naming it; without CI it skips, named in the summary; an optional extra skips in both, named in the summary.

Each case is a real pytest run in a subprocess, loading the suite's conftest as a plugin over a one-file probe
(so it takes a second or two, not a suite's worth)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PROBE = textwrap.dedent("""
    from tests import needs

    def test_on_the_shared_datasets(shared_datasets):
        assert shared_datasets.exists()

    def test_without_them():
        pass
""")


def _pytest(tmp_path: Path, probe: str, ci: bool, datasets: Path) -> subprocess.CompletedProcess:
    (tmp_path / "test_probe.py").write_text(probe)
    env = {**os.environ, "PYTHONPATH": str(REPO), "UNIROUTE_TEST_SHARED_DATASETS": str(datasets),
           "OMP_NUM_THREADS": "1"}
    env.pop("CI", None)
    if ci:
        env["CI"] = "true"
    # The probe's folder has no pytest configuration, so the repository's addopts (random order, workers) stay out.
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "tests.conftest", "-q", "-ra",
                           "-p", "no:cacheprovider", "--rootdir", str(tmp_path), str(tmp_path / "test_probe.py")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def _lines_naming(result: subprocess.CompletedProcess, text: str) -> list[str]:
    return [line for line in (result.stdout + result.stderr).splitlines() if text in line]


def test_ci_with_the_shared_datasets_missing_fails_in_one_line(tmp_path):
    missing = tmp_path / "no" / "datasets"
    result = _pytest(tmp_path, PROBE, ci=True, datasets=missing)
    assert result.returncode != 0, result.stdout
    named = _lines_naming(result, str(missing))
    assert len(named) == 1, result.stdout + result.stderr
    assert "CI=true" in named[0] and "shared datasets" in named[0]
    assert "passed" not in result.stdout  # nothing ran


def test_outside_ci_the_missing_datasets_skip_and_the_summary_names_them(tmp_path):
    missing = tmp_path / "no" / "datasets"
    result = _pytest(tmp_path, PROBE, ci=False, datasets=missing)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed, 1 skipped" in result.stdout
    [skip] = [line for line in result.stdout.splitlines() if line.startswith("SKIPPED")]
    assert f"the shared datasets ({missing}) is missing" in skip


@pytest.mark.parametrize("check", ["module", "installed"])  # imported, or only found (a file that imports it later)
def test_ci_with_a_pinned_dependency_missing_fails_in_one_line(tmp_path, check):
    probe = f"from tests import needs\n\nneeds.{check}('uniroute_no_such_pinned_module')\n\n\ndef test_x():\n    pass\n"
    result = _pytest(tmp_path, probe, ci=True, datasets=tmp_path)
    assert result.returncode != 0, result.stdout + result.stderr
    named = _lines_naming(result, "uniroute_no_such_pinned_module")
    assert len(named) == 1 and "CI=true" in named[0], result.stdout + result.stderr
    outside = _pytest(tmp_path, probe, ci=False, datasets=tmp_path)
    # Exit status 5: the probe's only test was skipped, so none ran.
    assert outside.returncode in (0, 5) and "1 skipped" in outside.stdout, outside.stdout + outside.stderr
    assert "uniroute_no_such_pinned_module" in outside.stdout  # the summary names it


def test_an_optional_extra_skips_in_ci_and_the_summary_names_it(tmp_path):
    probe = "from tests import needs\n\nneeds.optional('uniroute_no_such_extra', 'gpu')\n\n\ndef test_x():\n    pass\n"
    result = _pytest(tmp_path, probe, ci=True, datasets=tmp_path)
    assert result.returncode in (0, 5) and "1 skipped" in result.stdout, result.stdout + result.stderr
    assert len(_lines_naming(result, "optional extra 'gpu' not installed")) == 1


@pytest.mark.parametrize("ci", ["true", "1", "TRUE"])
def test_ci_is_read_from_the_environment(ci, monkeypatch):
    from tests import needs

    monkeypatch.setenv("CI", ci)
    assert needs.in_ci()
    monkeypatch.setenv("CI", "false")
    assert not needs.in_ci()
