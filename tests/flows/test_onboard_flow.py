"""The onboarding flow before the first build: it completes, the results stay, and it says what the CLI says."""

from __future__ import annotations

from tests.flows.test_ingest_flow import _run_name
from tests.helpers import ingest
from tests.operations_cases import EARLY, EARLY_LINE, early_results
from uniroute import store


def test_onboarding_flow_before_the_first_build_completes_and_says_the_models_join_later(
    prefect_harness, home, tmp_path, monkeypatch
):
    from flows.onboard import onboard_models

    monkeypatch.setenv("UNIROUTE_HOME", str(home))
    monkeypatch.setenv("UNIROUTE_MLFLOW", "false")
    ingest(home / "uniroute.duckdb", early_results(tmp_path), split="val", progress=False)  # as the inbox lands it
    state = onboard_models(EARLY, return_state=True)
    assert state.is_completed()
    assert state.result() == {"skipped": True, "models": [EARLY], "reason": EARLY_LINE}
    assert _run_name(state) == EARLY_LINE  # the same words as `uniroute onboard` prints
    with store.opened(home / "uniroute.duckdb", read_only=True) as con:
        details = [r[0] for r in con.execute("select detail from operations where kind = 'onboard'").fetchall()]
    assert details == [EARLY_LINE]
