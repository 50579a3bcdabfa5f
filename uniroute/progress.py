"""Progress of a long step: a tqdm bar with rate and ETA on a terminal, periodic log lines everywhere else.

A bar written into a file or a Prefect log is noise (carriage returns, one line per refresh), so where stderr is
not a terminal the same updates become an INFO line on the caller's logger at most every `every_seconds`, plus
one when the step ends: quiet by default on the command line (WARNING), visible with `-v` and in any handler
that takes the `uniroute` logger's INFO records (a flow run forwards them to its Prefect log: flows/common.py).
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Any

# Set on every progress record (`extra`): a console that shows only what a user must act on (a flow run's,
# flows/common.py) still shows these, so no long step is silent there.
PROGRESS = "uniroute_progress"
MARK = {PROGRESS: True}
# Off a terminal, a line at most this often: half of the 10 s a user waits before a step looks stuck,
# so a step's own pauses between updates still leave no 10 s silence.
EVERY_SECONDS = 5.0


class LoggedProgress:
    """The part of tqdm's interface the pipeline uses (update, set_postfix_str, close, with), as log lines."""

    def __init__(self, total: int, desc: str, unit: str, logger: logging.Logger, every_seconds: float) -> None:
        self.total, self.desc, self.unit, self.logger, self.every = total, desc, unit, logger, every_seconds
        self.n = 0
        self.postfix = ""
        self.started = self.last = time.monotonic()
        self.closed = False

    def line(self) -> str:
        """`desc: n/total unit (p%), rate unit/s, about s left [postfix]`."""
        elapsed = max(time.monotonic() - self.started, 1e-9)
        rate = self.n / elapsed
        text = f"{self.desc}: {self.n:,}/{self.total:,} {self.unit}"
        if self.total:
            text += f" ({100 * self.n / self.total:.0f}%)"
        text += f", {rate:,.0f} {self.unit}/s"
        if 0 < self.n < self.total and rate > 0:
            text += f", about {(self.total - self.n) / rate:,.0f} s left"
        return f"{text} [{self.postfix}]" if self.postfix else text

    def update(self, n: int = 1) -> None:
        self.n += n
        now = time.monotonic()
        if now - self.last >= self.every and self.n < self.total:
            self.last = now
            self.logger.info(self.line(), extra=MARK)

    def set_postfix_str(self, text: str) -> None:
        self.postfix = text

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.logger.info(f"{self.line()} in {time.monotonic() - self.started:,.1f} s", extra=MARK)

    def __enter__(self) -> LoggedProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def progress_bar(total: int, desc: str, unit: str, logger: logging.Logger, enabled: bool = True,
                 every_seconds: float = EVERY_SECONDS, **tqdm_options: Any) -> Any:
    """A tqdm bar on a terminal, a LoggedProgress elsewhere, a disabled bar when not enabled."""
    from tqdm.auto import tqdm

    if not enabled:
        return tqdm(total=total, disable=True)
    if sys.stderr.isatty():
        return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, **tqdm_options)
    return LoggedProgress(total, desc, unit, logger, every_seconds)


class Ticking:
    """A step without countable units (building a model file, a build's stages): on a terminal a line with the
    stage and the elapsed time, refreshed every second by a daemon thread; elsewhere an INFO line per stage and
    every `every_seconds` while one lasts. Call it with a stage name to move on."""

    def __init__(self, desc: str, logger: logging.Logger, enabled: bool, every_seconds: float = EVERY_SECONDS) -> None:
        import threading

        self.desc, self.logger, self.every = desc, logger, every_seconds
        self.stage = ""
        self.silent = False  # a stage that draws a bar of its own (embedding): the line waits
        self.started = self.last = time.monotonic()
        self.terminal = enabled and sys.stderr.isatty()
        self.logged = enabled and not self.terminal
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._tick, daemon=True) if enabled else None

    def _text(self) -> str:
        return f"{self.desc}: {self.stage} ({time.monotonic() - self.started:,.0f} s)"

    def _tick(self) -> None:
        while not self.done.wait(1.0):
            if self.terminal and not self.silent:
                sys.stderr.write("\r\033[K" + self._text())
                sys.stderr.flush()
            elif time.monotonic() - self.last >= self.every:
                self.last = time.monotonic()
                self.logger.info(self._text(), extra=MARK)

    def __call__(self, stage: str, own_bar: bool = False) -> None:
        if self.terminal and own_bar and not self.silent:
            sys.stderr.write("\r\033[K")  # the stage's own bar takes the line
        self.stage, self.silent = stage, own_bar
        if self.terminal and not own_bar:  # every stage shows at once, however short
            sys.stderr.write("\r\033[K" + self._text())
            sys.stderr.flush()
        if self.logged:
            self.last = time.monotonic()
            self.logger.info(self._text(), extra=MARK)

    def __enter__(self) -> Ticking:
        if self.thread is not None:
            self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        if self.thread is not None:
            self.thread.join()
        if self.terminal:
            sys.stderr.write("\r\033[K" + self._text().replace(f": {self.stage}", ": done") + "\n")
            sys.stderr.flush()


def ticking(desc: str, logger: logging.Logger, enabled: bool = True, every_seconds: float = EVERY_SECONDS) -> Ticking:
    """A Ticking progress line for a step measured in stages and seconds rather than units."""
    return Ticking(desc, logger, enabled, every_seconds)
