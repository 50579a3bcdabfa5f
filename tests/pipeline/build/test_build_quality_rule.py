"""A build that tunes on samples serves the quality-only rule as fitted on them (kind_quality_rule.full_scale):
the driver holds no other validation prompt's losses for the rule's paired tests, so nothing re-measures it."""

from __future__ import annotations

from tests.helpers import ingest
from tests.pipeline.build.build_golden import SAMPLED, logs
from uniroute import store
from uniroute.pipeline.build import nightly as build_module
from uniroute.pipeline.pool import registry


def test_a_sampled_build_at_one_cost_serves_the_rule_fitted_on_its_samples(tmp_path, monkeypatch):
    frame = logs()
    frame["cost"] = 1.0  # every model costs the same: the rule is a candidate
    frame.to_parquet(tmp_path / "logs.parquet", index=False)
    db = tmp_path / "uniroute.duckdb"
    ingest(db, tmp_path / "logs.parquet", progress=False)
    for name, value in SAMPLED.items():
        monkeypatch.setattr(build_module, name, value)
    with store.opened(db) as con:
        result = build_module.run_build(con, "tfidf", seed=0, kinds=("kmeans", "quality_rule"))
    kinds = {c["kind"]: c["candidate_router_id"] for c in result.candidates}
    assert set(kinds) == {"kmeans", "quality_rule"}
    with store.opened(db, read_only=True) as con:
        rule = registry.load_router_version(con, kinds["quality_rule"])
        plain = registry.load_router_version(con, kinds["kmeans"])
    assert rule.kind == "quality_rule" and rule.router.psi_floor is not None
    # The K-means candidate was measured on every validation prompt; the rule keeps its samples' clusters.
    assert rule.router.k >= 1 and plain.router.k >= 1
