"""The Makefile's pip steps with progress and without noise: `python -m deployments.install -- pip install ...`.

With `--quiet` pip is silent for a minute per step; without it, it prints a line per package and requirement
("Requirement already satisfied" for every pinned package on a rerun) and is still silent while it installs,
when stdout is not a terminal. This wrapper runs the command, keeps every line it prints in a log file, and
shows one status line instead: the phase (collecting, downloading, installing, building) with a count and the
latest package, rewritten in place on a terminal and printed as a line at most every `--every` seconds
elsewhere, and at least that often while pip says nothing. A failure prints pip's last lines and its exit code.
Standard library only: it runs in the bare virtual environment, before anything is installed.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import threading
import time
from collections import deque
from pathlib import Path

# pip's own lines, in the order of its phases; anything else is kept in the log file only.
PHASES = (
    (re.compile(r"^(?:Collecting|Processing) (\S+)"), "collecting"),
    (re.compile(r"^\s*(?:Downloading|Using cached) (\S+)"), "downloading"),
    (re.compile(r"^Building wheels? for (\S+)"), "building"),
    (re.compile(r"^\s*Building (?:editable|wheel) for (\S+)"), "building"),
    (re.compile(r"^Installing collected packages: (.*)"), "installing"),
    (re.compile(r"^Successfully installed (.*)"), "installed"),
)
TAIL_LINES = 40  # what a failure shows of pip's output


class Status:
    """The current phase, how many packages it has seen and the latest one; printed at most every `every` s."""

    def __init__(self, label: str, every: float, terminal: bool) -> None:
        self.label, self.every, self.terminal = label, every, terminal
        self.phase, self.count, self.latest = "starting", 0, ""
        self.started = self.shown = time.monotonic()
        self.lock = threading.Lock()

    def saw(self, line: str) -> None:
        for pattern, phase in PHASES:
            found = pattern.match(line)
            if found:
                with self.lock:
                    if phase != self.phase:
                        self.phase, self.count = phase, 0
                    names = found.group(1).split(", ") if phase == "installing" else [found.group(1)]
                    self.count += len(names) if phase == "installing" else 1
                    self.latest = "" if phase in ("installing", "installed") else names[-1].split("/")[-1]
                self.show(force=phase in ("installing", "installed"))
                return

    def text(self) -> str:
        packages = f"{self.count} package{'s' if self.count != 1 else ''}"
        latest = f", latest {self.latest}" if self.latest else ""
        detail = f" ({packages}{latest})" if self.count else ""
        return f"    {self.label}: {self.phase}{detail}, {time.monotonic() - self.started:.0f} s"

    def show(self, force: bool = False) -> None:
        """On a terminal: rewrite the line at every change; elsewhere a line when forced or `every` s passed."""
        with self.lock:
            now = time.monotonic()
            if self.terminal:
                sys.stdout.write("\r\033[K" + self.text())
            elif force or now - self.shown >= self.every:
                sys.stdout.write(self.text() + "\n")
            else:
                return
            self.shown = now
            sys.stdout.flush()

    def end(self) -> None:
        if self.terminal:
            sys.stdout.write("\r\033[K" + self.text() + "\n")
            sys.stdout.flush()


def run(command: list[str], label: str, log_path: Path, every: float, terminal: bool) -> int:
    """Run the command with a status line; its exit code. Its full output goes to log_path."""
    status = Status(label, every, terminal)
    tail: deque[str] = deque(maxlen=TAIL_LINES)
    done = threading.Event()

    def heartbeat() -> None:  # pip is silent for long stretches (installing torch): the line still moves
        while not done.wait(1.0 if terminal else every / 2):
            status.show()

    log_path.parent.mkdir(parents=True, exist_ok=True)
    ticker = threading.Thread(target=heartbeat, daemon=True)
    with open(log_path, "a", encoding="utf-8") as log:
        log.write(f"$ {' '.join(command)}\n")
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1,
                                errors="replace")
        ticker.start()
        assert proc.stdout is not None
        for line in proc.stdout:
            log.write(line)
            tail.append(line.rstrip("\n"))
            status.saw(line)
        code = proc.wait()
    done.set()
    ticker.join()
    status.end()
    if code:
        print(f"    {label} failed (exit {code}); pip's last lines (all of them in {log_path}):", file=sys.stderr)
        print("\n".join(tail), file=sys.stderr)
    return code


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="pip")
    parser.add_argument("--log", type=Path, default=Path(".venv/install.log"))
    parser.add_argument("--every", type=float, default=5.0, help="seconds between lines off a terminal")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command (a pip install)")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given: python -m deployments.install -- pip install ...")
    sys.exit(run(command, args.label, args.log, args.every, sys.stdout.isatty()))


if __name__ == "__main__":
    main()
