"""On a terminal, `uniroute build` is never silent: a line with its stage and elapsed time, refreshed each second."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _on_a_terminal(args: list[str], env: dict[str, str], timeout: float = 600) -> tuple[int, str]:
    """Run the CLI with a pseudo-terminal as stdin, stdout and stderr; (exit code, everything it wrote)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "uniroute", *args], env=env, cwd=REPO, stdin=slave, stdout=slave,
                            stderr=slave, close_fds=True)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return proc.wait(timeout=timeout), b"".join(chunks).decode(errors="replace")


def test_build_shows_its_stages_and_time_on_a_terminal(tmp_path):
    from uniroute.synth import write_synthetic_logs

    summary = write_synthetic_logs(tmp_path / "logs", n_prompts=300, n_models=3, n_topics=3, seed=1, with_split=True)
    env = {**os.environ, "UNIROUTE_HOME": str(tmp_path / "home"), "UNIROUTE_MLFLOW": "false",
           "UNIROUTE_EMBEDDER": "tfidf", "UNIROUTE_BUILD_KINDS": "kmeans,knn", "PYTHONPATH": str(REPO)}
    subprocess.run([sys.executable, "-m", "uniroute", "ingest", str(summary.logs_path)], env=env, cwd=REPO,
                   check=True, capture_output=True)
    code, text = _on_a_terminal(["build"], env)
    assert code == 0, text[-2000:]
    assert re.search(r"build: (loading|embedding|tuning|choosing|scoring|recording)[^\r\n]* \(\d+ s\)", text), text
    assert re.search(r"build: done \(\d+ s\)", text), text
    # the line goes on through the commit and the publication (half a minute of silence after "done" before)
    assert text.index("build: logging the router to MLflow and publishing its tables") < text.index("build: done")
    assert "built " in text  # the result line follows the progress line
