"""How `uniroute sql` prints streamed rows: CSV and JSON batch by batch, a table or Markdown once (within the
row cap); and Ctrl-C turned into a request the query's reader acts on. Imported by every command: pandas is
imported only when rows are printed."""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    import pandas as pd

DEFAULT_MAX_ROWS = 10_000


def write_rows(frames: Iterator[pd.DataFrame], fmt: str, out: TextIO | None = None) -> int:
    """Print the frames in fmt as they arrive (a table or Markdown needs every row first); the rows printed."""
    import pandas as pd

    from uniroute.frame_output import render

    out = out or sys.stdout
    rows = 0
    if fmt in ("table", "markdown"):  # aligned columns: one render, bounded by the row cap
        frame = pd.concat(list(frames), ignore_index=True)
        out.write(render(frame, fmt) + "\n")
        return len(frame)
    opened = False  # JSON: one array, written a batch of records at a time
    for number, frame in enumerate(frames):
        if fmt == "csv":
            out.write(frame.to_csv(index=False, header=number == 0))
        elif records := frame.to_json(orient="records", date_format="iso")[1:-1]:
            out.write(("," if opened else "[") + records)
            opened = True
        rows += len(frame)
    if fmt == "json":
        out.write("]\n" if opened else "[]\n")
    out.flush()
    return rows


def cut_off_notice(shown: int) -> str:
    """The one line saying the row cap cut the result short."""
    return (f"showing the first {shown:,} rows; the query returned more (--max-rows N shows more, --max-rows 0 "
            "all; --csv or --json stream them)")


@contextlib.contextmanager
def ctrl_c_cancels() -> Iterator[threading.Event]:
    """An Event that Ctrl-C (SIGINT) sets, instead of raising KeyboardInterrupt, while the block runs."""
    cancel = threading.Event()
    if threading.current_thread() is not threading.main_thread():  # signals reach the main thread only
        yield cancel
        return
    previous = signal.signal(signal.SIGINT, lambda *_: cancel.set())
    try:
        yield cancel
    finally:
        signal.signal(signal.SIGINT, previous)
