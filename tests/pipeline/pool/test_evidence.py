"""Evidence before traffic: a model with a handful of lucky validation answers waits instead of taking traffic."""

from __future__ import annotations

import pandas as pd

from tests.helpers import ingest
from tests.pipeline.pool.test_onboard import champion, champion_db  # noqa: F401 (fixture)
from uniroute import store
from uniroute.pipeline.pool.evidence import MIN_VAL_ANSWERS
from uniroute.pipeline.pool.onboard import missing_from_champion, onboard_models


def _answers(path, model: str, prompts: list[str], score: float = 1.0):
    pd.DataFrame({"prompt_id": prompts, "prompt": [f"question number {p[1:]}" for p in prompts], "model": model,
                  "score": score, "cost": 0.5}).to_csv(path, index=False)
    return path


def test_three_lucky_answers_wait_for_more_evidence_and_take_no_traffic(champion_db, tmp_path):  # noqa: F811
    assert MIN_VAL_ANSWERS > 3
    before = champion(champion_db)
    ingest(champion_db, _answers(tmp_path / "c.csv", "c", ["p0", "p1", "p3"]), split="val", progress=False)
    with store.session(champion_db, "onboard") as s:
        result = onboard_models(s.con, ["c"])
        assert missing_from_champion(s.con) == []  # reconciliation does not keep trying either
    assert result.models == () and result.waiting == {"c": 3}
    assert "c waits for more evidence (3 validation answers" in result.line()
    after = champion(champion_db)
    assert after.router_id == before.router_id and "c" not in after.router.models  # no traffic at any budget
    # With enough answers the same model joins.
    ingest(champion_db, _answers(tmp_path / "c2.csv", "c", ["p2", "p4", "p5"], 0.0), split="val", progress=False)
    with store.session(champion_db, "onboard") as s:
        result = onboard_models(s.con, ["c"])
    assert result.models == ("c",) and not result.waiting and "c" in champion(champion_db).router.models


def test_the_threshold_is_a_setting(champion_db, tmp_path):  # noqa: F811
    ingest(champion_db, _answers(tmp_path / "c.csv", "c", ["p0", "p1", "p3"]), split="val", progress=False)
    with store.session(champion_db, "onboard") as s:
        result = onboard_models(s.con, ["c"], min_answers=2)
    assert result.models == ("c",)
