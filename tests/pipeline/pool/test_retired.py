"""Retired stays retired: late results are stored but neither land nor bring the model back; onboarding a
retired model needs `reactivate`, said in one line."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.helpers import ingest, retire
from tests.pipeline.pool.test_onboard import champion, champion_db  # noqa: F401 (fixture)
from uniroute import store
from uniroute.pipeline.pool.onboard import OnboardError, onboard_models


def _status(db_path, model: str) -> str:
    with store.opened(db_path, read_only=True) as con:
        return con.execute("select status from models where model = ?", [model]).fetchone()[0]


def test_late_results_of_a_retired_model_are_stored_but_never_bring_it_back(champion_db, tmp_path):  # noqa: F811
    retire(champion_db, "b")
    before = champion(champion_db).router_id
    path = tmp_path / "b-late.csv"
    pd.DataFrame({"prompt_id": ["late1", "late2"], "prompt": ["a late question", "another late one"],
                  "model": "b", "score": [1.0, 0.0], "cost": 3.0}).to_csv(path, index=False)
    late = ingest(champion_db, path, split="val", progress=False)
    assert late.rows_accepted > 0  # stored ...
    assert late.landed_models == () and late.retired_models == ("b",)  # ... but no onboarding trigger
    assert "results for retired b stored, which stay retired" in late.line()
    assert _status(champion_db, "b") == "retired" and champion(champion_db).router_id == before


def test_onboarding_a_retired_model_needs_reactivate(champion_db):  # noqa: F811
    retire(champion_db, "b")
    with store.session(champion_db, "onboard") as s, pytest.raises(OnboardError, match=r"were retired.*--reactivate"):
        onboard_models(s.con, ["b"])
    assert _status(champion_db, "b") == "retired"
    with store.session(champion_db, "onboard") as s:
        result = onboard_models(s.con, ["b"], reactivate=True)
    assert result.models == ("b",) and _status(champion_db, "b") == "active"
    assert "b" in champion(champion_db).router.models


def test_the_cli_refuses_a_retired_model_results_in_one_line_unless_reactivated(champion_db, tmp_path,  # noqa: F811
                                                                                  monkeypatch):
    from typer.testing import CliRunner

    from uniroute.cli import app

    monkeypatch.setenv("UNIROUTE_HOME", str(champion_db.parent))
    monkeypatch.setenv("UNIROUTE_MLFLOW", "false")
    retire(champion_db, "b")
    path = tmp_path / "b-again.csv"
    pd.DataFrame({"prompt_id": ["p0", "p3"], "prompt": ["question number 0", "question number 3"], "model": "b",
                  "score": [0.0, 1.0], "cost": 3.0}).to_csv(path, index=False)
    refused = CliRunner().invoke(app, ["onboard", "--results", str(path)])
    assert refused.exit_code == 1 and "were retired" in refused.output and "--reactivate" in refused.output
    assert len(refused.output.strip().splitlines()) == 1 and _status(champion_db, "b") == "retired"
    back = CliRunner().invoke(app, ["onboard", "--results", str(path), "--reactivate"])
    assert back.exit_code == 0, back.output
    assert _status(champion_db, "b") == "active" and "b" in champion(champion_db).router.models
