"""A build stores every prompt's cluster under its own DuckDB cap, not the fit's: at 1M prompts the join of every
build prompt to the workers' assignment files left the fit's 128 MB no room for the count after it."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.helpers import ingest
from tests.synthetic_logs import synthetic_long
from uniroute import store
from uniroute.pipeline.build import nightly as build_module
from uniroute.pipeline.build.clusters import store_assignments
from uniroute.pipeline.pool import registry
from uniroute.routers.cluster.kmeans import Centroids, clustering_id_of


def test_a_new_clustering_is_stored_whole_under_a_cap_too_small_for_its_join(tmp_path: Path) -> None:
    db = tmp_path / "uniroute.duckdb"
    synthetic_long(n_prompts=300, n_models=3).to_parquet(tmp_path / "logs.parquet", index=False)
    ingest(db, tmp_path / "logs.parquet", progress=False)
    with store.opened(db) as con:
        result = build_module.run_build(con, "tfidf", seed=0, kinds=("kmeans",))
        router = registry.load_router_version(con, result.router_id).router
        centroids = Centroids(np.random.default_rng(0).normal(size=(5, router.assigner.centers.shape[1])))
        # A cap the join cannot run in, as the fit's 128 MB was at 1M prompts (without the assignments' own cap the
        # insert fails here: "failed to allocate").
        with store.memory_limited(con, "16MB"):
            written = store_assignments(con, router.embedder_id, centroids, clustering_id_of(centroids))
        expected = con.execute("select count(*) from build_prompt_ids").fetchone()[0]
    assert written == expected > 0
