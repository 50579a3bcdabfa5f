"""Psi's evidence read from the store (uniroute/pipeline/pool/psi_data.py): the SQL group-by matches numpy's."""

import numpy as np
import pandas as pd
import pytest

from tests.routers.cluster.test_psi import CLUSTER_OF, LOSSES, MODELS
from uniroute import store
from uniroute.pipeline.pool.psi_data import psi_frame, psi_of_active_models
from uniroute.routers.cluster.psi import psi_from_losses


def _load_results(con, cluster_of, losses, models, retired=()):
    """Write the fixture into the real tables: prompt p<i>, score = 1 - loss, NaN = no row."""
    now = pd.Timestamp("2026-01-01")
    store.write_frame(con, "models", pd.DataFrame({
        "model": list(models), "status": ["retired" if m in retired else "active" for m in models],
        "first_seen": [now] * len(models)}))
    rows = [
        {"prompt_id": f"p{i}", "model": m, "score": 1.0 - losses[i, j], "cost": 0.1,
         "source_file": "fixture", "file_hash": "h", "ingested_at": now}
        for i in range(losses.shape[0]) for j, m in enumerate(models) if not np.isnan(losses[i, j])
    ]
    store.write_frame(con, "results", pd.DataFrame(rows))


def test_psi_sql_group_by_on_a_real_store(db_path):
    # Extra prompts outside the clustered relation and a retired model must not count.
    extra = np.array([[1.0, 1.0, 1.0, 0.0]] * 2)
    all_losses = np.vstack([np.column_stack([LOSSES, [0.0] * 6]), extra])
    with store.opened(db_path) as con:
        _load_results(con, np.zeros(8), all_losses, (*MODELS, "old"), retired=("old",))
    with store.opened(db_path, read_only=True) as con:
        prompt_clusters = pd.DataFrame({"prompt_id": [f"p{i}" for i in range(6)], "cluster": CLUSTER_OF})
        frame = psi_frame(con, prompt_clusters)
        psi = psi_of_active_models(con, prompt_clusters, 4)
        # The temporary relation is gone afterwards.
        names = {r[0] for r in con.execute("select table_name from information_schema.tables").fetchall()}
        assert "prompt_clusters" not in names
    assert list(frame.columns) == ["model", "cluster", "loss_sum", "n"]
    assert set(frame.model) == set(MODELS)
    expected = psi_from_losses(CLUSTER_OF, LOSSES, 4, MODELS)
    assert psi.models == MODELS
    np.testing.assert_allclose(psi.values, expected.values)
    np.testing.assert_array_equal(psi.counts, expected.counts)


def test_prompt_clusters_must_name_prompts_and_clusters(db_path):
    with store.opened(db_path) as con, pytest.raises(ValueError, match="lacks columns"):
        psi_frame(con, pd.DataFrame({"prompt_id": ["p0"]}))
