"""The build holds only its samples and validation prompts in the driver (build.HeldRows) and writes every prompt's
cluster from the workers' assignment files: what it stores is what the build that held every vector and the whole
score matrix stored (tests/pipeline/data/build_golden.json, recorded from it by
tests/pipeline/build/build_golden.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.pipeline.build.build_golden import GOLDEN, built


def _close(actual: object, expected: object, where: str = "") -> None:
    """Equal, floats to 1e-9 (the JSON round trip), NaN equal to NaN."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict) and sorted(actual) == sorted(expected), where
        for key in expected:
            _close(actual[key], expected[key], f"{where}.{key}")
    elif isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), where
        for n, (a, e) in enumerate(zip(actual, expected, strict=True)):
            _close(a, e, f"{where}[{n}]")
    elif isinstance(expected, float):
        assert (np.isnan(actual) and np.isnan(expected)) or actual == pytest.approx(expected, abs=1e-9), where
    else:
        assert actual == expected, where


@pytest.mark.parametrize("case", ["whole", "sampled"])
def test_the_build_stores_what_the_whole_matrix_build_stored(tmp_path, case):
    golden = json.loads(GOLDEN.read_text())[case]
    observed = json.loads(json.dumps(built(tmp_path / case, case == "sampled")))
    _close(observed, golden, case)


def test_the_held_rows_are_the_whole_matrices_rows(tmp_path):
    """load_store_index's mask and result_rows' cells at any rows, or the cells its one pass kept, are
    load_store_data's (the whole matrices)."""
    from tests.helpers import ingest
    from tests.pipeline.build.build_golden import logs
    from uniroute import store
    from uniroute.pipeline.build.cells import Keep
    from uniroute.pipeline.build.matrices import load_store_data, load_store_index, result_rows, store_split

    logs().to_parquet(tmp_path / "logs.parquet", index=False)
    ingest(tmp_path / "uniroute.duckdb", tmp_path / "logs.parquet", progress=False)
    with store.opened(tmp_path / "uniroute.duckdb") as con:
        data, index = load_store_data(con), load_store_index(con)
        rows = np.sort(np.random.default_rng(0).choice(len(index.split), 77, replace=False))
        scores, costs = result_rows(con, rows, len(index.models))
        # The one pass (build._keep): rows kept in memory (scores of some, costs of others) or spilled to disk.
        spilled = np.isin(np.arange(len(index.split)), rows[20:])
        kept = load_store_index(con, lambda split: Keep(rows[:40], rows[:20], spilled))
    one_pass = kept.cells.take(rows[::-1], 50)  # any order; costs of the first 50
    np.testing.assert_array_equal(kept.labelled, index.labelled)
    np.testing.assert_array_equal(one_pass[0], scores[::-1])
    np.testing.assert_array_equal(one_pass[1], costs[::-1][:50])
    routing = data.eval_data.routing
    assert index.models == routing.models and index.prompt_ids == data.eval_data.prompt_ids
    np.testing.assert_array_equal(index.labelled, ~np.isnan(routing.scores))
    np.testing.assert_array_equal(index.split, data.split)
    np.testing.assert_array_equal(scores, routing.scores[rows])
    np.testing.assert_array_equal(costs, routing.costs[rows])
    assert store_split(index, 0).__dict__.keys() == store_split(data, 0).__dict__.keys()
    for name, value in store_split(data, 0).__dict__.items():
        np.testing.assert_array_equal(getattr(store_split(index, 0), name), value)


def test_the_knn_test_curve_by_blocks_of_test_prompts_is_the_whole_one(tmp_path, monkeypatch):
    """The K-NN held-out gamma found 7 test prompts at a time stores the same metrics as found all at once."""
    from uniroute.routers.knn import kind as kind_knn

    monkeypatch.setattr(kind_knn, "TEST_BLOCK", 7)
    golden = json.loads(GOLDEN.read_text())["whole"]
    _close(json.loads(json.dumps(built(tmp_path / "blocks", False)))["metrics"], golden["metrics"], "metrics")
