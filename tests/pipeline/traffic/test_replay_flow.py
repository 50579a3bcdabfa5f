"""The replay flow leaves the replay's Markdown report and per-model table as Prefect artifacts."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from tests.flows.test_traffic_artifact import _artifacts
from uniroute.cli import app

runner = CliRunner()


def test_the_replay_flow_leaves_its_report(prefect_harness, traffic_home, prompts):
    from flows.replay import replay_traffic

    routed = runner.invoke(app, ["route", *prompts[:30], "--json"], catch_exceptions=False)
    assert routed.exit_code == 0, routed.output
    assert runner.invoke(app, ["inbox", "--no-onboard"], catch_exceptions=False).exit_code == 0
    served = json.loads(routed.stdout)[0]["model"]
    state = replay_traffic(without=(served,), return_state=True)
    result = state.result()
    assert result["overall"]["decisions"] == 30 and result["pool"] and served not in result["pool"]
    found = _artifacts(state.state_details.flow_run_id)
    assert found["uniroute-replay"].data.startswith("# Replay of every decision with router ")
    assert served in json.dumps(found["uniroute-replay-models"].data)
