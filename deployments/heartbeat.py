"""A line every few seconds while the demo waits on something that says nothing itself (a server starting, a
runner registering a deployment): a user who sees no output for 10 s thinks it is stuck."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from uniroute.progress import EVERY_SECONDS


@contextmanager
def heartbeat(what: str | Callable[[], str], every: float = EVERY_SECONDS) -> Iterator[None]:
    """Print `... still <what> (N s)` every `every` seconds until the block ends; a callable `what` is asked each
    time (a count that moves)."""
    started = time.monotonic()
    done = threading.Event()

    def beat() -> None:
        while not done.wait(every):
            said = what() if callable(what) else what
            print(f"... still {said} ({time.monotonic() - started:.0f} s)", flush=True)

    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
