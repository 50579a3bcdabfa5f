"""The build's note when its tuned K is tiny: one sentence for cluster kinds at K <= 2, nothing otherwise."""

from __future__ import annotations

import pytest

from uniroute.pipeline.build.result import TINY_K, BuildResult, tiny_table_note


@pytest.mark.parametrize("kind", ["kmeans", "kmeans_shrunk", "learnedmap", "quality_rule"])
def test_a_cluster_router_with_a_tiny_k_says_more_validation_answers_would_help(kind: str) -> None:
    note = tiny_table_note(kind, 2, 298)
    assert note is not None and note.startswith("K = 2 was tuned on 298 validation prompts")
    assert "more validation answers would help" in note and "`uniroute onboarding-set`" in note
    assert tiny_table_note(kind, 1) is not None and "tuned:" in tiny_table_note(kind, 1)  # no count known (status)


def test_no_note_above_the_threshold_for_neighbours_or_for_an_unknown_kind() -> None:
    assert tiny_table_note("kmeans", TINY_K + 1, 5000) is None
    assert tiny_table_note("knn", 2, 298) is None  # k counts neighbours, not topics
    assert tiny_table_note(None, 2) is None and tiny_table_note("kmeans", None) is None
    assert tiny_table_note("a-kind-from-elsewhere", 2) is None


def test_the_build_line_carries_the_note() -> None:
    note = tiny_table_note("kmeans", 2, 298)
    result = BuildResult(router_id="kmeans-1", kind="kmeans", k=2, val_area=0.5, promoted=True, reason="first",
                         metrics={}, models=("a", "b"), excluded_models=(), roles={}, n_prompts={"val": 298},
                         notes=(note,))
    assert result.line().endswith(f"; {note}")
