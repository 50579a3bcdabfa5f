"""The build's choice of router kind: made on validation without test prompts, and recorded where users see it.

A real pool: synthetic logs (4 LLMs, 400 prompts with splits), TF-IDF embeddings fitted on training prompts, a
DuckDB file per store."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.helpers import build, ingest
from uniroute import store
from uniroute.pipeline.build.nightly import BuildResult
from uniroute.pipeline.build.result import tiny_table_note
from uniroute.pipeline.build.tuned_kinds import KindError, checked_kinds
from uniroute.routers.kinds import kind_names, router_kind
from uniroute.synth import write_synthetic_logs

CHOICE = ["kind", "value", "shrinkage", "val_area", "val_area_se", "diff_to_default", "diff_se", "p_best", "chosen"]


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> pd.DataFrame:
    summary = write_synthetic_logs(tmp_path_factory.mktemp("logs"), n_prompts=400, n_models=4, n_topics=4, seed=5,
                                   with_split=True)
    return pd.read_parquet(summary.logs_path)


def _built(root: Path, logs: pd.DataFrame) -> tuple[Path, BuildResult]:
    root.mkdir()
    logs.to_parquet(root / "logs.parquet", index=False)
    db = root / "uniroute.duckdb"
    ingest(db, root / "logs.parquet", progress=False)
    return db, build(db, "tfidf")


@pytest.fixture(scope="module")
def built(tmp_path_factory, logs) -> tuple[Path, BuildResult]:
    return _built(tmp_path_factory.mktemp("clean") / "store", logs)


def test_poisoned_test_labels_change_nothing_the_selection_sees(built, logs, tmp_path):
    """Every test-split score flipped (1 - score): the same kinds, hyper-parameters and validation Areas."""
    _, clean = built
    test = logs.split == "test"
    assert test.sum() > 0
    poisoned_logs = logs.assign(score=np.where(test, 1.0 - logs.score, logs.score))
    _, poisoned = _built(tmp_path / "poisoned", poisoned_logs)
    a = clean.candidates_table()[CHOICE].reset_index(drop=True)
    b = poisoned.candidates_table()[CHOICE].reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b, check_exact=True)
    assert poisoned.kind == clean.kind and poisoned.k == clean.k and poisoned.val_area == clean.val_area
    # The poison did reach the build: the held-out (test-prompt) Areas are not what they were.
    assert poisoned.metrics[clean.kind]["area"] != pytest.approx(clean.metrics[clean.kind]["area"], abs=1e-6)


def test_the_build_says_when_its_tuned_k_is_tiny(built):
    _, result = built
    note = tiny_table_note(result.kind, result.k, result.n_prompts["val"])
    assert (note in result.notes) if note else not any("validation answers would help" in n for n in result.notes)


def test_the_candidates_table_and_view_after_a_build(built):
    db, result = built
    # The quality-only rule is no candidate where models cost differently (the synthetic logs have costs).
    candidates = [k for k in kind_names() if not router_kind(k).quality_only]
    assert [c["kind"] for c in result.candidates] == candidates
    with store.opened(db, read_only=True) as con:
        view = con.execute("select * from router_selection").df()
        routers = con.execute("select router_id, kind, candidate_of, promoted, val_area from routers").df()
        champion = con.execute("select router_id, kind from champion_router").df()
    assert sorted(view.kind) == sorted(candidates) and set(view.build_router_id) == {result.router_id}
    assert view.chosen.sum() == 1 and view.loc[view.chosen, "kind"].item() == result.kind
    assert (view.default_kind == "kmeans_hier").all() and view.build_promoted.all()
    assert view.val_area.is_monotonic_decreasing  # best validation Area first
    assert (view.val_area_se > 0).all() and np.isclose(view.p_best.sum(), 1.0)
    default = view.set_index("kind").loc["kmeans_hier"]
    assert default.diff_to_default == 0.0
    for row in view.itertuples():
        assert row.diff_to_default == pytest.approx(row.val_area - default.val_area)
    # The chosen kind is the champion; every other candidate is stored beside it, not served.
    assert champion.router_id.item() == result.router_id and champion.kind.item() == result.kind
    by_id = routers.set_index("router_id")
    for row in view.itertuples():
        stored = by_id.loc[row.candidate_router_id]
        assert stored.kind == row.kind and stored.val_area == pytest.approx(row.val_area)
        if row.chosen:
            assert row.candidate_router_id == result.router_id and stored.promoted
        else:
            assert stored.candidate_of == result.router_id and not stored.promoted
    # The rule (selection.select_kind): the default unless another kind beats it by more than 2 SEs.
    clear = view[(view.kind != "kmeans_hier") & (view.diff_to_default > 2 * view.diff_se)]
    assert result.kind == (clear.sort_values("val_area").kind.iloc[-1] if len(clear) else "kmeans_hier")


def test_kinds_are_checked_before_anything_runs():
    assert checked_kinds(None) == kind_names()
    assert checked_kinds(["knn", " kmeans"]) == ("kmeans", "knn")  # KINDS order, blanks stripped
    with pytest.raises(KindError, match="unknown router kinds \\['zero'\\]: choose from kmeans, kmeans_shrunk"):
        checked_kinds(["kmeans", "zero"])
    with pytest.raises(KindError, match="unknown router kinds"):
        checked_kinds([" "])


def test_a_sampled_build_tunes_and_scores_as_a_state_over_every_row(built, monkeypatch):
    """The sampled state holds only the sampled rows: the same tuned values, Areas and held-out curves as a state
    over all rows with the sampled split (what the build did before it stopped copying every row)."""
    from uniroute.experiments.protocol import EvalConfig
    from uniroute.pipeline.build import nightly as build_module
    from uniroute.pipeline.build.matrices import load_store_data, store_split
    from uniroute.selection.state import TrialState

    db, _ = built
    with store.opened(db) as con:
        data = load_store_data(con)
    split = store_split(data, seed=0)
    monkeypatch.setattr(build_module, "TUNING_SAMPLE", len(split.train) // 2)
    monkeypatch.setattr(build_module, "TUNING_VAL_SAMPLE", len(split.val) // 2)
    monkeypatch.setattr(build_module, "EVAL_TEST_SAMPLE", len(split.test) // 2)
    X = np.random.default_rng(3).normal(size=(len(data.split), 8)).astype(np.float32)
    config = EvalConfig(seed=0, methods=("kmeans", "knn", "zero"))
    tuning = build_module._tuning_rows(split, len(data.split))
    routing = data.eval_data.routing
    rows = tuning.rows  # what HeldRows.load holds first
    held = build_module.HeldRows(rows, len(rows), X[rows], routing.scores[rows], routing.costs[rows])
    state, sample = held.state(tuning, routing.models, config), tuning.sample
    assert len(state.X) == len(sample.train) + len(sample.val) + len(sample.test) < len(X)
    assert len(sample.train) == len(split.train) // 2 and set(sample.val) <= set(split.val)
    every_row = TrialState(X, data.eval_data.routing, sample, config)
    n_val = len(sample.val)
    tuned = {kind: state.tuned(kind, n_val) for kind in ("kmeans", "knn")}
    assert tuned == {kind: every_row.tuned(kind, n_val) for kind in tuned}
    metrics, curves = build_module.held_out_metrics(state, n_val, tuned)
    expected_metrics, expected_curves = build_module.held_out_metrics(every_row, n_val, tuned)
    assert metrics == expected_metrics
    pd.testing.assert_frame_equal(curves, expected_curves, check_exact=True)
