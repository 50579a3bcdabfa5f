"""Progress of long steps: a tqdm bar on a terminal, periodic INFO lines elsewhere, nothing when switched off."""

from __future__ import annotations

import io
import logging

from uniroute import progress
from uniroute.progress import LoggedProgress, progress_bar

log = logging.getLogger("uniroute.test_progress")


def test_off_a_terminal_the_updates_become_log_lines(capsys, caplog, monkeypatch):
    caplog.set_level(logging.INFO, logger=log.name)
    clock = iter([0.0, 5.0, 12.0, 12.0, 13.0, 20.0, 20.0])  # start; updates (+1 for a line); close: line, total
    monkeypatch.setattr(progress.time, "monotonic", lambda: next(clock))
    with progress_bar(100, "embed e", "prompt", log, every_seconds=10) as bar:
        assert isinstance(bar, LoggedProgress)
        bar.update(10)  # t=5: too soon for a line
        bar.update(30)  # t=12: a line, with rate and time left
        bar.update(60)  # t=13: done, left to close
    lines = [r.getMessage() for r in caplog.records]
    assert lines == ["embed e: 40/100 prompt (40%), 3 prompt/s, about 18 s left",
                     "embed e: 100/100 prompt (100%), 5 prompt/s in 20.0 s"]
    assert capsys.readouterr().err == ""


def test_on_a_terminal_a_tqdm_bar_with_rate(monkeypatch):
    terminal = io.StringIO()
    terminal.isatty = lambda: True  # type: ignore[method-assign]
    monkeypatch.setattr(progress.sys, "stderr", terminal)
    with progress_bar(3, "trials", "trial", log) as bar:
        bar.update(3)
    assert "trials: 100%" in terminal.getvalue() and "trial/s" in terminal.getvalue()


def test_switched_off_shows_nothing(capsys, caplog):
    caplog.set_level(logging.INFO, logger=log.name)
    with progress_bar(5, "embed", "prompt", log, enabled=False) as bar:
        bar.update(5)
    assert capsys.readouterr().err == "" and caplog.text == ""
