"""In a flow run the console shows the library's warnings and its progress lines, not its other INFO lines."""

from __future__ import annotations

import io
import logging

from flows.common import library_log_in_run
from uniroute.progress import LoggedProgress, ticking


def test_a_runs_console_shows_progress_but_not_the_librarys_other_info_lines():
    console = io.StringIO()
    handler = logging.StreamHandler(console)
    root = logging.getLogger()
    root.addHandler(handler)
    library = logging.getLogger("uniroute.operations.builds")
    try:
        with library_log_in_run():
            library.info("loaded 3164 prompts")  # for the run's log only
            with ticking("embed", library, enabled=True, every_seconds=3600) as stage:
                stage("preparing the static embedder")
            with LoggedProgress(10, "embed e", "prompt", library, every_seconds=3600) as bar:
                bar.update(10)
            library.warning("the store is busy")
    finally:
        root.removeHandler(handler)
    lines = console.getvalue().splitlines()
    assert lines[0].startswith("embed: preparing the static embedder (") and lines[0].endswith(" s)")
    assert lines[1].startswith("embed e: 10/10 prompt (100%)")
    assert lines[2:] == ["the store is busy"]
