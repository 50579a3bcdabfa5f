"""A build records under its loading's DuckDB cap, not the fit's: the rows it writes (every build prompt's cluster,
held by the open transaction) filled the fit's 128 MB at 1M prompts, and the next query failed."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import ingest
from tests.synthetic_logs import synthetic_long
from uniroute import store
from uniroute.pipeline.build import nightly as build_module


def test_a_build_records_whole_when_the_fits_cap_could_not_hold_its_writes(tmp_path: Path, monkeypatch) -> None:
    db = tmp_path / "uniroute.duckdb"
    synthetic_long(n_prompts=300, n_models=3).to_parquet(tmp_path / "logs.parquet", index=False)
    ingest(db, tmp_path / "logs.parquet", progress=False)
    # A fit cap as tight for 300 prompts as 128 MB was for 1M: the fit runs in it, the recording would not
    # ("failed to allocate" in the assignments' insert when the recording ran under it).
    monkeypatch.setattr(build_module, "FIT_DUCKDB_MEMORY", "8MB")
    with store.opened(db) as con:
        result = build_module.run_build(con, "tfidf", seed=0, kinds=("kmeans",))
        stored = con.execute("select count(*) from cluster_assignments a join routers r on r.clustering_id = "
                             "a.clustering_id where r.router_id = ?", [result.router_id]).fetchone()[0]
        expected = con.execute("select count(*) from build_prompt_ids").fetchone()[0]
    assert stored == expected > 0
