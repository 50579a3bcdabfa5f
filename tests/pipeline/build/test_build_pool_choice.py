"""A build at one cost re-decides the served kind on its pool's validation answers (selection.pool_choice) and
serves what that decision chose; a build with costs never runs it."""

from __future__ import annotations

import logging
import re

from tests.helpers import ingest
from tests.pipeline.build.build_golden import SAMPLED, logs
from uniroute import store
from uniroute.pipeline.build import nightly as build_module

DECISION = re.compile(r"equal costs, pool CV .*: served (\w+)")


def _build(tmp_path, monkeypatch, caplog, one_cost: bool):
    frame = logs()
    if one_cost:
        frame["cost"] = 1.0
    frame.to_parquet(tmp_path / "logs.parquet", index=False)
    db = tmp_path / "uniroute.duckdb"
    ingest(db, tmp_path / "logs.parquet", progress=False)
    for name, value in SAMPLED.items():
        monkeypatch.setattr(build_module, name, value)
    with caplog.at_level(logging.INFO, logger="uniroute.selection.pool_choice"), store.opened(db) as con:
        result = build_module.run_build(con, "tfidf", seed=0, kinds=("kmeans_shrunk", "quality_rule"))
    return result, [DECISION.search(r.getMessage()) for r in caplog.records if DECISION.search(r.getMessage())]


def test_a_build_at_one_cost_serves_the_pool_decision(tmp_path, monkeypatch, caplog):
    result, decisions = _build(tmp_path, monkeypatch, caplog, one_cost=True)
    assert len(decisions) == 1, decisions
    assert result.kind == decisions[0].group(1)


def test_a_build_with_costs_does_not_re_decide(tmp_path, monkeypatch, caplog):
    result, decisions = _build(tmp_path, monkeypatch, caplog, one_cost=False)
    assert decisions == [] and result.kind == "kmeans_shrunk"
