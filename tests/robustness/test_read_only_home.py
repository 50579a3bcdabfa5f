"""A read-only state folder (a replica, a mounted backup, a folder without write permission): `route` and
`uniroute sql` still answer, `doctor --check` reports, and every writer refuses in one line naming the folder;
the home is left exactly as it was.

The home is made read-only for real. As root, chmod does not stop a write, so the commands run in a private
mount namespace where the home is bind-mounted read-only (EROFS, what a read-only mount answers); otherwise the
home is chmod-ed read-only (EACCES). All commands run through the CLI in one child process.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.robustness.conftest import NEWCOMER, file_sha256, table_checksums

# Runs the CLI once per argument list inside the read-only view and prints [[exit code, stdout, stderr], ...].
CHILD = """
import json, sys
from typer.testing import CliRunner
from uniroute.cli import app
runner = CliRunner()
out = []
for args in json.loads(sys.argv[1]):
    r = runner.invoke(app, args)
    out.append([r.exit_code, r.stdout, r.stderr])
print(json.dumps(out))
"""
# In a private mount namespace: keep the mounts from leaking out, bind the home onto itself, remount it read-only.
READ_ONLY_MOUNT = ('mount --make-rprivate / && mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && '
                   'exec "$@"')


def _can_mount() -> bool:
    if shutil.which("unshare") is None:
        return False
    return subprocess.run(["unshare", "-m", "sh", "-c", "mount --make-rprivate /"], capture_output=True).returncode == 0


def _state(home: Path) -> dict[str, str]:
    """Every file under the home with its sha256 (links by their target)."""
    out = {}
    for path in sorted(home.rglob("*")):
        rel = str(path.relative_to(home))
        out[rel] = ("-> " + os.readlink(path)) if path.is_symlink() else (file_sha256(path) if path.is_file() else "/")
    return out


def _run_read_only(home: Path, commands: list[list[str]]) -> tuple[list[tuple[int, str, str]], str]:
    """[(exit code, stdout, stderr)] of each command run against the home made read-only, and the errno's words."""
    child = [sys.executable, "-c", CHILD, json.dumps(commands)]
    env = {**os.environ, "UNIROUTE_HOME": str(home), "UNIROUTE_MLFLOW": "false"}
    if os.geteuid() == 0:
        if not _can_mount():
            pytest.skip("running as root without mount namespaces: chmod cannot make the home read-only for root")
        done = subprocess.run(["unshare", "-m", "sh", "-c", READ_ONLY_MOUNT, str(home), *child], env=env,
                              capture_output=True, text=True, timeout=600)
        reason = "Read-only file system"
    else:
        modes = {p: p.stat().st_mode for p in [home, *home.rglob("*")] if not p.is_symlink()}
        for p, mode in modes.items():
            p.chmod(mode & ~0o222)
        try:
            done = subprocess.run(child, env=env, capture_output=True, text=True, timeout=600)
        finally:
            for p, mode in modes.items():
                p.chmod(mode)
        reason = "Permission denied"
    assert done.returncode == 0, done.stderr[-3000:]
    return [tuple(r) for r in json.loads(done.stdout.strip().splitlines()[-1])], reason


def test_a_read_only_home_routes_and_answers_sql_and_every_writer_refuses_in_one_line(pool, logs, tmp_path):
    home = pool.home
    newcomer = tmp_path / "newcomer.parquet"
    logs[logs.model == NEWCOMER].to_parquet(newcomer, index=False)
    files, tables = _state(home), table_checksums(pool.db_path)
    writers = [["ingest", str(newcomer)], ["build"], ["onboard", "--results", str(newcomer)], ["publish", "--force"],
               ["route", "--log", "what is two and two"]]
    readers = [["route", "what is two and two"], ["sql", "select count(*) as n from results"], ["doctor", "--check"]]
    results, reason = _run_read_only(home, writers + readers)
    names = {"ingest": "ingest", "build": "build", "onboard": "onboard", "publish": "publish", "route": "route-log"}
    for args, (code, _out, err) in zip(writers, results, strict=False):
        assert code == 1 and len(err.strip().splitlines()) == 1, (args, err)
        assert err.strip() == (
            f"error: {home} is read-only ({reason}): `{names[args[0]]}` writes there and changed nothing; make the "
            "folder writable (or work in a writable copy: cp -a), while `uniroute route`, `uniroute sql` and "
            "`uniroute doctor --check` answer from it as it is"), (args, err)
    (route_code, routed, _), (sql_code, answered, _), (doctor_code, report, _) = results[len(writers):]
    assert route_code == 0 and "synth-llm-0" in routed, routed
    assert sql_code == 0 and str(len(logs[logs.model != NEWCOMER])) in answered, answered
    assert doctor_code == 0, report
    assert f"ok       home: {home} is read-only ({reason}): checked without writing" in report
    assert "ok       published: `current` is the newest publication" in report
    # Nothing changed: not a file, not a row, no lock or spill folder left behind.
    assert _state(home) == files and table_checksums(pool.db_path) == tables
