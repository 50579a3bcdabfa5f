"""What must not appear in a log on the normal path: tracebacks, warnings, asyncio's cancellations, a
coroutine never awaited, and DuckDB's nanobind leak report."""

from __future__ import annotations

from pathlib import Path

NOISE = ("Traceback", "WARNING", "Warning", "nanobind", "CancelledError", "never awaited")


def noisy_lines(text: str) -> list[str]:
    """The lines of `text` that carry any NOISE marker."""
    return [line for line in text.splitlines() if any(marker in line for marker in NOISE)]


def noisy_logs(folder: Path) -> dict[str, list[str]]:
    """Per log file in `folder` (`*.log`), its noisy lines; files without any are left out."""
    found = {path.name: noisy_lines(path.read_text(errors="replace")) for path in sorted(folder.glob("*.log"))}
    return {name: lines for name, lines in found.items() if lines}
