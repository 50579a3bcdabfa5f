"""Retries only for the store's write lock held by another process; every other failure fails at once."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from contextlib import contextmanager

import pytest

from flows.transient import _is_lock_conflict
from uniroute import store

HOLD = ("import duckdb, sys, time; con = duckdb.connect(sys.argv[1]); print('locked', flush=True); "
        "time.sleep(float(sys.argv[2]))")


@contextmanager
def store_held_by_another_process(db_path, seconds: float):
    """A real second process holding DuckDB's write lock on the store for `seconds`."""
    with store.opened(db_path):
        pass
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(db_path), str(seconds)], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        yield holder
    finally:
        holder.kill()
        holder.wait()


def test_only_a_lock_conflict_counts_as_transient(db_path):
    with store_held_by_another_process(db_path, 30), pytest.raises(store.StoreError) as caught:
        store.connect(db_path)
    assert _is_lock_conflict(caught.value)
    assert not _is_lock_conflict(store.StoreError("no champion"))
    assert not _is_lock_conflict(ValueError("score 1.5 outside [0, 1]"))


def _task_runs(flow_run_id) -> dict[str, int]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    async def read():
        async with get_client() as client:
            return await client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))

    return {run.name.rsplit("-", 1)[0]: run.run_count for run in asyncio.run(read())}


def test_inbox_flow_waits_out_another_process_holding_the_store(prefect_harness, home, monkeypatch):
    from flows.ingest import ingest_inbox

    monkeypatch.setenv("UNIROUTE_HOME", str(home))
    (home / "inbox").mkdir()
    (home / "inbox" / "val.csv").write_text("prompt_id,prompt,model,score,cost,split\np1,Q,m,1,0.5,val\n")
    with store_held_by_another_process(home / "uniroute.duckdb", 3):
        state = ingest_inbox(return_state=True)
    assert state.is_completed(), state
    assert [o["status"] for o in state.result()] == ["ingested"]
    assert _task_runs(state.state_details.flow_run_id) == {"ingest-inbox-files": 2}  # failed on the lock, retried


def test_a_failure_that_would_fail_again_is_not_retried(prefect_harness, home, monkeypatch):
    from flows.publish import publish_routing_tables

    monkeypatch.setenv("UNIROUTE_HOME", str(home))
    with store.opened(home / "uniroute.duckdb"):
        pass  # a store without any router: publishing has nothing to publish
    state = publish_routing_tables(return_state=True)
    assert state.is_failed()
    with pytest.raises(LookupError, match="no champion"):
        state.result()
    assert _task_runs(state.state_details.flow_run_id) == {"publish-snapshot": 1}
