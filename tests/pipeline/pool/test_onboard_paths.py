"""onboard_models on a real store, path by path: nothing named, unknown, retired (and reactivated), too few answers
to take traffic, and a K-NN champion that routes by per-prompt labels. Added where the mutation run
(make mutation) found these paths untested by fast tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.helpers import ingest, retire
from tests.pipeline.pool.test_onboard import PROMPTS, _write_long, champion, champion_db  # noqa: F401 (fixture)
from uniroute import store
from uniroute.pipeline.pool import registry
from uniroute.pipeline.pool.onboard import OnboardError, OnboardResult, missing_from_champion, onboard_models
from uniroute.routers.knn.neighbours import KnnRouter


def _onboard(db_path: Path, models: list[str], **options) -> OnboardResult:
    with store.session(db_path, "onboard") as s:
        return onboard_models(s.con, models, **options)


def _status(db_path: Path, model: str) -> str:
    with store.opened(db_path, read_only=True) as con:
        return con.execute("select status from models where model = ?", [model]).fetchone()[0]


def test_naming_no_model_or_an_unknown_one_is_refused_in_one_line(champion_db):  # noqa: F811
    with pytest.raises(OnboardError, match="^no model named: nothing to onboard$"):
        _onboard(champion_db, [])
    with pytest.raises(OnboardError, match=r"^models \['nobody'\] have no results in the store: ingest their "
                                           "validation results first$"):
        _onboard(champion_db, ["a", "nobody"])


def test_a_retired_model_comes_back_only_when_reactivated(champion_db):  # noqa: F811
    retire(champion_db, "a")
    without_a = champion(champion_db).router_id
    with pytest.raises(OnboardError, match=r"models \['a'\] were retired: onboarding them again needs "
                                           "`--reactivate`"):
        _onboard(champion_db, ["a"])
    assert _status(champion_db, "a") == "retired" and champion(champion_db).router_id == without_a
    result = _onboard(champion_db, ["a"], reactivate=True)
    assert result.models == ("a",) and result.parent_id == without_a
    assert _status(champion_db, "a") == "active" and champion(champion_db).router.models == ("b", "a")


def test_a_model_with_too_few_answers_waits_and_no_version_is_written(champion_db, tmp_path):  # noqa: F811
    path = _write_long(tmp_path / "t.csv", "t", [1] * 6, 0.5)
    pd.read_csv(path).head(3).to_csv(path, index=False)
    ingest(champion_db, path, split="val", progress=False)
    result = _onboard(champion_db, ["t"])
    assert (result.router_id, result.parent_id, result.models, result.unchanged) == (
        "kmeans-parent", "kmeans-parent", (), ())
    assert result.waiting == {"t": 3} and result.embedded_prompts == 0 and 0 <= result.seconds < 60
    assert champion(champion_db).router_id == "kmeans-parent"


@pytest.fixture
def knn_champion(champion_db):  # noqa: F811
    """The same store with a K-NN champion over the six validation prompts (k = 2); nothing to embed."""
    refs = np.array([[1, 0], [0.8, 0.6], [0.6, 0.8], [0, 1], [-0.6, 0.8], [-1, 0]], dtype=np.float32)
    labels = np.array([[0.0, 0.0, 0.0, 1.0, 1.0, 1.0], [1.0, 1.0, 0.0, 0.0, 0.0, 0.0]])
    router = KnnRouter("emb-test", ("a", "b"), np.array([1.0, 3.0]), labels, refs, tuple(PROMPTS), 2)
    with store.session(champion_db, "test-setup") as s:
        registry.save_router_version(s.con, registry.NewVersion(
            router, "knn-parent", router.clustering_id(), "knn", "fp", val_area=0.6, promoted=True,
            reason="test K-NN champion"))
    return champion_db


def test_a_knn_champion_takes_a_newcomer_by_its_labels_on_the_references(knn_champion, tmp_path):
    ingest(knn_champion, _write_long(tmp_path / "c.csv", "c", [1, 0, 0, 1, 1, 0], 2.0), split="val",
           progress=False)
    result = _onboard(knn_champion, ["c"])
    assert result.models == ("c",) and result.parent_id == "knn-parent" and result.embedded_prompts == 0
    assert 0 <= result.seconds < 60
    child = champion(knn_champion).router
    assert child.models == ("a", "b", "c")
    np.testing.assert_array_equal(child.labels[2], [0.0, 1.0, 1.0, 0.0, 0.0, 1.0])  # loss = 1 - score
    assert child.costs[2] == pytest.approx(2.0)


def test_a_knn_champion_refuses_a_model_without_labels_on_its_references(knn_champion, tmp_path):
    elsewhere = pd.DataFrame({"prompt_id": [f"q{i}" for i in range(6)], "prompt": [f"other {i}" for i in range(6)],
                              "model": "d", "score": 1.0, "cost": 1.0})
    elsewhere.to_csv(tmp_path / "d.csv", index=False)
    ingest(knn_champion, tmp_path / "d.csv", split="val", progress=False)
    with pytest.raises(OnboardError, match=r"^model 'd' has no result on any of the 6 reference prompts of the "
                                           "K-NN champion: give it results on the validation prompts"):
        _onboard(knn_champion, ["d"])
    rows = [("p0", "n", "a", "model_a")]
    pd.DataFrame(rows, columns=["prompt_id", "model_a", "model_b", "winner"]).assign(
        prompt="question number 0", split="val").to_csv(tmp_path / "n.csv", index=False)
    ingest(knn_champion, tmp_path / "n.csv", progress=False)
    with pytest.raises(OnboardError, match=r"^models \['n'\] have no results on validation prompts: nothing to "
                                           r"route them by \(a K-NN champion routes by per-prompt labels"):
        _onboard(knn_champion, ["n"])
    assert champion(knn_champion).router_id == "knn-parent"


def test_a_model_the_champion_already_routes_so_is_unchanged_and_no_version_is_written(champion_db):  # noqa: F811
    result = _onboard(champion_db, ["b"])
    assert (result.router_id, result.parent_id, result.models, result.unchanged) == (
        "kmeans-parent", "kmeans-parent", (), ("b",))
    assert result.line() == "b already routable in router kmeans-parent: nothing to change"
    assert 0 <= result.seconds < 60  # the run's own duration
    assert champion(champion_db).router_id == "kmeans-parent"


def test_missing_from_champion_lists_the_onboardable_models_it_does_not_route(champion_db, tmp_path):  # noqa: F811
    def missing() -> list[str]:
        with store.opened(champion_db, read_only=True) as con:
            return missing_from_champion(con)

    assert missing() == []  # a and b are routed
    ingest(champion_db, _write_long(tmp_path / "c.csv", "c", [1, 0, 0, 1, 1, 0], 2.0), split="val", progress=False)
    path = _write_long(tmp_path / "t.csv", "t", [1] * 6, 0.5)
    pd.read_csv(path).head(3).to_csv(path, index=False)  # three answers: waits for more evidence
    ingest(champion_db, path, split="val", progress=False)
    assert missing() == ["c"]


def test_nothing_is_missing_before_the_first_build(tmp_path, home):
    db = home / "empty.duckdb"
    ingest(db, _write_long(tmp_path / "c.csv", "c", [1, 0, 0, 1, 1, 0], 2.0), split="val", progress=False)
    with store.opened(db, read_only=True) as con:
        assert missing_from_champion(con) == []
