"""A large ingest killed with SIGKILL mid-way: DuckDB's spill files beside the store (`uniroute.duckdb.tmp/`, about
2.5x a large file) stayed for ever, unnoticed; `uniroute doctor --check` reports them, `uniroute doctor` removes them,
the store is as before the ingest (one transaction), and the same file ingests afterwards."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tests.robustness.conftest import table_checksums
from uniroute.faults import CRASH_ENV
from uniroute.settings import Settings

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow
SPILL_WAIT = 300  # seconds the ingest may take to spill on a busy machine


def _env(settings: Settings) -> dict[str, str]:
    env = {**os.environ, "UNIROUTE_HOME": str(settings.home), "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1",
           "UNIROUTE_MLFLOW": "false"}
    env.pop(CRASH_ENV, None)
    return env


def _cli(settings: Settings, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "uniroute", *args], env=_env(settings), capture_output=True,
                          text=True, timeout=300, cwd=REPO)


def _junk_log(path: Path, rows: int) -> Path:
    """A long CSV of new prompts for the pool's models, a fifth of the scores not numbers (about 130 bytes a row)."""
    rng = np.random.default_rng(0)
    words = np.array([f"w{i}" for i in range(50)])
    with open(path, "w", encoding="utf-8") as out:
        out.write("prompt_id,prompt,model,score,cost\n")
        for start in range(0, rows, 50_000):
            m = min(50_000, rows - start)
            texts = [" ".join(rng.choice(words, 25)) for _ in range(m)]
            scores = rng.random(m).round(3).astype(str)
            scores[rng.random(m) < 0.2] = "n/a"
            out.writelines(f"kill{(start + i) // 5},\"{texts[i]}\",synth-llm-0{(start + i) % 4},{scores[i]},0.001\n"
                           for i in range(m))
    return path


def _spilled(folder: Path) -> list[Path]:
    """DuckDB's spill files in folder that hold data."""
    if not folder.is_dir():
        return []
    return [p for p in folder.iterdir() if p.name.endswith(".tmp") and p.stat().st_blocks > 0]


def test_a_kill_mid_ingest_leaves_spill_files_that_doctor_reports_and_removes(pool, tmp_path):
    before = table_checksums(pool.db_path)
    log = _junk_log(tmp_path / "big.csv", 400_000)  # about 50 MB: its uncommitted rows spill past 128 MB
    spill = Path(f"{pool.db_path}.tmp")
    with open(tmp_path / "ingest.out", "w") as out:
        ingest = subprocess.Popen([sys.executable, "-m", "uniroute", "ingest", str(log)], env=_env(pool), cwd=REPO,
                                  stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + SPILL_WAIT
        while not _spilled(spill) and ingest.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert ingest.poll() is None, f"the ingest ended before it spilled: {(tmp_path / 'ingest.out').read_text()}"
        assert _spilled(spill), "no spill within the wait"
        os.kill(ingest.pid, signal.SIGKILL)
        assert ingest.wait(timeout=60) == -signal.SIGKILL  # killed, not finished
    left = _spilled(spill)
    assert left and sum(p.stat().st_blocks * 512 for p in left) > 0

    check = _cli(pool, "doctor", "--check")
    assert check.returncode == 1, check.stdout + check.stderr
    line = next(line for line in check.stdout.splitlines() if " spill:" in line)
    assert line.startswith("broken") and "spill file(s)" in line and "`uniroute doctor` removes them" in line
    assert _spilled(spill), "--check removes nothing"

    repaired = _cli(pool, "doctor")
    assert repaired.returncode == 0, repaired.stdout + repaired.stderr
    assert any(line.startswith("repaired") and " spill: removed " in line for line in repaired.stdout.splitlines())
    assert not spill.exists()
    assert table_checksums(pool.db_path) == before  # nothing of the killed ingest was committed

    again = _cli(pool, "doctor", "--check")
    assert any(line.startswith("ok") and " spill:" in line for line in again.stdout.splitlines()), again.stdout
    small = _junk_log(tmp_path / "small.csv", 5_000)
    done = _cli(pool, "ingest", str(small))
    assert done.returncode == 0 and "1,000 new prompts" in done.stdout + done.stderr, done.stdout + done.stderr
