"""A normal run of the command line prints results, not noise: no Python warnings, no Dask/distributed or MLflow
INFO lines, no download or progress bars when the output is not a terminal, no cloudpickle warning; `-v` shows
the details."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

# What a user cannot act on, and what a bar looks like when its carriage returns land in a file or a log.
NOISE = {
    "a Python warning": re.compile(r"\w+Warning\b|warnings\.warn"),
    "an INFO log line": re.compile(r"\bINFO\b"),
    "a distributed log line": re.compile(r"distributed\.\w+"),
    "an MLflow download bar": re.compile(r"Downloading artifacts"),
    "a cloudpickle warning": re.compile(r"cloudpickle", re.IGNORECASE),
    "a progress bar": re.compile(r"\d+%\|.*\||it/s\]|prompt/s\]"),
}


def _noise(output: str) -> list[str]:
    return [f"{what}: {line.strip()[:200]}" for line in output.splitlines()
            for what, pattern in NOISE.items() if pattern.search(line)]


@pytest.mark.slow
def test_a_normal_run_prints_no_noise_and_verbose_shows_details(tmp_path: Path, built_embedders_cache: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    # The static model file is built once per test session (about 45 s); the run reuses it like a second `make run`.
    (home / "cache").symlink_to(built_embedders_cache, target_is_directory=True)
    bin_dir = Path(sys.executable).parent
    # A user's environment: none of the test session's settings or warning filters.
    own = ("UNIROUTE_", "MLFLOW_", "PREFECT_", "PYTHONWARNINGS")
    env = {key: value for key, value in os.environ.items() if not key.startswith(own)}
    env.update(UNIROUTE_HOME=str(home), UNIROUTE_EMBEDDER="static",
               PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}")
    uniroute = str(bin_dir / "uniroute")

    def run(*args: str) -> str:
        done = subprocess.run([uniroute, *args], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"uniroute {' '.join(args)} failed: {done.stderr[-2000:]}"
        return done.stdout + done.stderr

    output = run("synth", "--out", str(tmp_path / "data"), "--prompts", "800", "--models", "6", "--split")
    output += run("ingest", str(tmp_path / "data" / "logs.parquet"))
    built = run("build")  # embeds, tunes K, fits K-means and the LearnedMap, evaluates, logs and registers in MLflow
    output += built
    output += run("publish")
    output += run("route", "What is the derivative of x squared?", "How do I knead bread dough?")
    output += run("sql", "select count(*) as models from pool_leaderboard")
    output += run("doctor", "--check")

    assert "as champion" in built and (home / "mlflow.db").exists()
    assert _noise(output) == [], "\n".join(_noise(output))
    # -v shows what the pipeline did (INFO lines of the library), without the third parties' chatter.
    verbose = run("-v", "publish", "--force")
    assert re.search(r"INFO uniroute\.", verbose), verbose[-2000:]
