"""Concurrent use: readers never see a partial table, a reader and a writer both finish, a second writer waits
with one line naming the first, and `route`/`sql` answer from the published snapshot while the store is held."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.robustness.conftest import NEWCOMER
from uniroute.pipeline.serving import snapshot
from uniroute.settings import Settings

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

# Says when it is about to publish: the reads start then, not during its seconds of imports.
PUBLISHER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from tests.helpers import publish
    home = Path(sys.argv[1])
    print("publishing", flush=True)
    for _ in range(int(sys.argv[2])):
        publish(home / "uniroute.duckdb", home / "published", force=True)
""")
# Holds the writer lock for a while, as a long build would; with a third argument, until a line on its stdin (at
# most that while), so a test can release it once the other side has shown it waits, whatever the machine's load.
HOLDER = textwrap.dedent("""
    import select, sys, time
    from pathlib import Path
    from uniroute import store
    with store.session(Path(sys.argv[1]) / "uniroute.duckdb", "build") as s:
        print("holding", flush=True)
        if len(sys.argv) > 3:
            select.select([sys.stdin], [], [], float(sys.argv[2]))
        else:
            time.sleep(float(sys.argv[2]))
""")


def _env(settings: Settings) -> dict[str, str]:
    return {**os.environ, "UNIROUTE_HOME": str(settings.home), "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1",
            "UNIROUTE_MLFLOW": "false"}


def _cli(settings: Settings, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "uniroute", *args], env=_env(settings), cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_a_thousand_reads_during_twenty_publishes_see_no_partial_table(pool):
    writer = subprocess.Popen([sys.executable, "-c", PUBLISHER, str(pool.home), "20"], env=_env(pool), cwd=REPO,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert writer.stdout.readline() == "publishing\n", writer.stderr.read()
    reads, versions, errors = 0, set(), []
    while writer.poll() is None or reads < 1000:
        try:
            current = snapshot.read_current(pool.published_dir)  # verifies every file against the manifest
            versions.add(current.version)
            assert len(current.routes) and len(current.budgets)
        except Exception as exc:  # noqa: BLE001 - every failure counts; none is expected
            errors.append(repr(exc))
        reads += 1
    assert writer.returncode == 0, writer.stderr.read()
    assert errors == [] and reads >= 1000
    assert len(versions) >= 2  # the reads really spanned publishes
    recorded = {p.name for p in pool.published_dir.iterdir() if p.name != "current"}
    assert len(recorded) == 21 and snapshot.current_version(pool.published_dir) == max(recorded)


def test_a_reader_and_a_writer_at_once_both_finish(pool, logs, tmp_path):
    extra = tmp_path / "extra.csv"
    logs[logs.model == NEWCOMER].drop(columns=["split"]).to_csv(extra, index=False)
    reader = _cli(pool, "sql", "select count(*) from results, (select 1 from range(2000000)) t")
    writer = _cli(pool, "ingest", str(extra))
    out_r, err_r = reader.communicate(timeout=300)
    out_w, err_w = writer.communicate(timeout=300)
    assert reader.returncode == 0, err_r
    assert writer.returncode == 0, err_w
    assert "results accepted" in out_w


def test_a_second_writer_waits_and_says_for_whom(pool, logs, tmp_path):
    extra = tmp_path / "extra.csv"
    logs[logs.model == NEWCOMER].drop(columns=["split"]).to_csv(extra, index=False)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(pool.home), "60", "until-told"], env=_env(pool),
                              cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    writer = None
    try:
        assert holder.stdout.readline().strip() == "holding"
        writer = _cli(pool, "ingest", str(extra))
        first = writer.stderr.readline()  # while the holder still holds (a fixed hold raced a slow start under load)
        holder.communicate("release\n", timeout=60)
        out, err = writer.communicate(timeout=300)
    finally:  # a failure above leaves neither process behind (at worst the holder lets go after its 60 s)
        for proc in (holder, writer):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
    assert writer.returncode == 0, first + err
    assert first.startswith("waiting for the store: `build` (pid "), first + err
    assert "results accepted" in out  # it waited for the holder, then did its work


def test_a_writer_gives_up_after_its_wait_in_one_line(pool, logs, tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(pool.home), "20"], env=_env(pool), cwd=REPO,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        env = {**_env(pool), "UNIROUTE_STORE_WAIT_SECONDS": "1"}
        result = subprocess.run([sys.executable, "-m", "uniroute", "retire", "synth-llm-01"], env=env, cwd=REPO,
                                capture_output=True, text=True, timeout=120)
    finally:
        holder.kill()
        holder.wait()
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("error: the store is busy: `build` (pid ") and "gave up after 1 s" in last


def test_route_and_sql_answer_from_the_snapshot_while_the_store_is_held(pool):
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(pool.home), "30"], env=_env(pool), cwd=REPO,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        version = snapshot.current_version(pool.published_dir)
        routed = _cli(pool, "route", "solve the equation for the variable", "--json")
        queried = _cli(pool, "sql", "select count(*) as n from current_routing_table", "--json")
        out_r, err_r = routed.communicate(timeout=120)
        out_q, err_q = queried.communicate(timeout=120)
    finally:
        holder.kill()
        holder.wait()
    assert routed.returncode == 0, err_r
    assert f"published snapshot {version}" in err_r and "`build` (pid" in err_r
    assert queried.returncode == 0, err_q
    assert f"answered from published snapshot {version}" in err_q and '"n":' in out_q
