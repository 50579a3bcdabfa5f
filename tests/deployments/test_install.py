"""The install's pip steps (deployments/install.py): a status line at least every few seconds, no pip noise, the
failure's last lines and exit code. A stand-in command prints pip's kinds of lines with pauses (no registry)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FAKE_PIP = """
import sys, time
for name in ("alpha", "beta", "gamma"):
    print(f"Collecting {name}==1.0", flush=True)
    print(f"  Downloading {name}-1.0-py3-none-any.whl (10 kB)", flush=True)
    print(f"Requirement already satisfied: {name}-dep in ./site-packages", flush=True)
print("Installing collected packages: alpha, beta, gamma", flush=True)
time.sleep(float(sys.argv[2]))  # pip installing torch: nothing printed for a long while
print("Successfully installed alpha-1.0 beta-1.0 gamma-1.0", flush=True)
sys.exit(int(sys.argv[1]))
"""


def _install(tmp_path: Path, code: int, silent_seconds: float) -> tuple[list[tuple[float, str]], int, str]:
    """Lines of the wrapper's stdout with their arrival time, its exit code, its stderr."""
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "deployments.install", "--label", "fake", "--every", "1", "--log",
         str(tmp_path / "install.log"), "--", sys.executable, "-c", FAKE_PIP, str(code), str(silent_seconds)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = [(time.monotonic() - started, line.rstrip("\n")) for line in proc.stdout]
    return lines, proc.wait(), proc.stderr.read()


def test_status_lines_keep_coming_without_pip_noise(tmp_path: Path) -> None:
    lines, code, err = _install(tmp_path, 0, silent_seconds=6)
    texts = [text for _, text in lines]
    assert code == 0 and not err
    assert not any("Requirement already satisfied" in t or "Downloading" in t for t in texts)
    assert any(t.startswith("    fake: installing (3 packages)") for t in texts)
    assert texts[-1].startswith("    fake: installed (1 package)")
    # the 6 s pip is silent while installing still gets a line every `--every` s (1 s; 3 s of slack for a loaded CI)
    gaps = [b - a for (a, _), (b, _) in zip(lines, lines[1:], strict=False)]
    assert max(gaps) < 4.0, texts
    assert "Requirement already satisfied: gamma-dep" in (tmp_path / "install.log").read_text()


def test_a_failure_shows_the_last_lines_and_keeps_the_exit_code(tmp_path: Path) -> None:
    _, code, err = _install(tmp_path, 3, silent_seconds=0)  # no pause: the failure's lines are what it checks
    assert code == 3
    assert "fake failed (exit 3)" in err and "Successfully installed alpha-1.0" in err
