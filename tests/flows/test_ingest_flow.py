"""The inbox flow under a real Prefect API: files move to done/ or failed/, the summary comes back."""

from __future__ import annotations

from pathlib import Path

from uniroute import store


def test_inbox_flow_ingests_moves_and_summarises(prefect_harness, home, monkeypatch):
    from flows.ingest import ingest_inbox

    monkeypatch.setenv("UNIROUTE_HOME", str(home))
    inbox = home / "inbox"
    inbox.mkdir()
    (inbox / "val.csv").write_text(
        "prompt_id,prompt,model,score,cost,split\np1,Q one,m_new,1,0.5,val\np2,Q two,m_old,0,0.5,train\n")
    (inbox / "broken.csv").write_text("prompt_id,prompt\np1,Q one\n")

    state = ingest_inbox(return_state=True)
    outcomes = state.result()
    assert _run_name(state) == "inbox: 1 failed, 1 ingested; results landed for m_new"

    assert [(o["name"], o["status"]) for o in outcomes] == [("broken.csv", "failed"), ("val.csv", "ingested")]
    failed, done = outcomes
    assert "missing required columns" in failed["error"]
    assert Path(failed["moved_to"]) == inbox / "failed" / "broken.csv"
    assert (inbox / "failed" / "broken.csv.reason.txt").read_text().strip() == failed["error"]
    assert done["landed_models"] == ["m_new"]
    assert done["summary"]["rows_accepted"] == 2 and done["summary"]["new_prompts"] == 2
    assert Path(done["moved_to"]) == inbox / "done" / "val.csv"
    assert sorted(p.name for p in inbox.iterdir() if p.name != ".inbox.lock") == ["done", "failed"]
    with store.opened(home / "uniroute.duckdb") as con:
        assert con.execute("select count(*) from results").fetchone() == (2,)
    state = ingest_inbox(return_state=True)
    assert state.result() == [] and _run_name(state) == "inbox: nothing new"


def _run_name(state) -> str:
    """The name the flow run ended with in the Prefect API."""
    import asyncio

    from prefect.client.orchestration import get_client

    async def read():
        async with get_client() as client:
            return await client.read_flow_run(state.state_details.flow_run_id)

    return asyncio.run(read()).name
