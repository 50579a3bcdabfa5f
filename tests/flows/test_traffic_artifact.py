"""The inbox flow ingests the decision spool and outcomes, and leaves yesterday's traffic as a Prefect artifact."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

from uniroute import store


def _record(i: int, when: str, model: str) -> str:
    return json.dumps({"record": "uniroute.decision", "schema_version": 1, "decision_id": f"d{i}", "decided_at": when,
                       "source": "pyfunc", "router_id": "r1", "text_hash": "0" * 64, "model": model, "lam": 0.0,
                       "propensity": 1.0})


def _router_r1(db_path) -> None:
    """A stored router version r1 routing m1 and m2 (never a champion), which the records name."""
    with store.opened(db_path) as con:
        con.execute("insert into routers (router_id, origin, clustering_id, kind, embedder_id, k, models, promoted, "
                    "reason, data_fingerprint, router, created_at) values ('r1', 'build', 'c1', 'kmeans', 'e1', 2, "
                    "['m1', 'm2'], false, 'a test fixture', 'f', ''::blob, now())")


def _artifacts(flow_run_id) -> dict:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    async def read():
        async with get_client() as client:
            found = await client.read_artifacts(
                artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id])))
            return {a.key: a for a in found}

    return asyncio.run(read())


def test_the_inbox_flow_summarises_yesterdays_traffic(prefect_harness, home, monkeypatch):
    from flows.ingest import ingest_inbox

    monkeypatch.setenv("UNIROUTE_HOME", str(home))
    monkeypatch.setenv("UNIROUTE_MLFLOW", "false")
    yesterday = (datetime.now(UTC) - timedelta(days=1)).strftime("%Y-%m-%dT12:00:00")
    today = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S")
    _router_r1(home / "uniroute.duckdb")
    spool = home / "spool" / "decisions"
    spool.mkdir(parents=True)
    (spool / "a.jsonl").write_text("".join(_record(i, yesterday, "m1" if i < 3 else "m2") + "\n" for i in range(4))
                                   + _record(9, today, "m1") + "\n")
    (home / "inbox").mkdir()
    state = ingest_inbox(return_state=True)
    assert [(o["name"], o["status"]) for o in state.result()] == [("a.jsonl", "ingested")]
    with store.opened(home / "uniroute.duckdb", read_only=True) as con:
        assert con.execute("select count(*) from routing_decisions").fetchone() == (5,)
    (home / "inbox" / "scores.csv").write_text("decision_id,score,cost\nd0,1,0.5\nd1,0,0.25\n")
    state = ingest_inbox(return_state=True)
    artifact = _artifacts(state.state_details.flow_run_id)["uniroute-traffic"]
    text = artifact.data
    assert f"# Traffic on {yesterday[:10]} (UTC)" in text and "**4 decisions** over 2 models" in text, text
    assert "**2 outcomes**: realised score 0.500" in text and "realised spend 0.75" in text, text
