"""Onboarding that embeds: a newcomer's new validation prompts (and a battle model's) are embedded with the
champion's own stored embedder (a TF-IDF fit, seconds) and assigned to its frozen clusters; an embedder that is
not the router's is refused; results on training prompts only give no Psi row. Added where the mutation run
(make mutation) found these paths untested by fast tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.helpers import ingest
from tests.pipeline.pool.test_battles import _set_cost
from uniroute import store
from uniroute.embed import embedder_state, fit_tfidf
from uniroute.pipeline.pool import registry
from uniroute.pipeline.pool.onboard import OnboardError, OnboardResult, onboard_models
from uniroute.routers.cluster.kmeans import clustering_id_of, fit_centroids
from uniroute.routers.router import Router
from uniroute.routers.rule import EmbedderMismatch

OLD = [f"p{i}" for i in range(6)]
OLD_TEXTS = ["cats purr softly", "cats chase mice", "cats sleep all day",
             "stocks fell sharply", "stocks rose on earnings", "stocks and bonds rally"]
NEW = [f"q{i}" for i in range(8)]
NEW_TEXTS = ["cats purr at night", "stocks fell again", "cats chase birds", "stocks rose again",
             "cats sleep at noon", "bonds and stocks slump", "cats purr and sleep", "stocks rally on bonds"]
C_SCORES = [1, 0, 1, 1, 0]  # c answers q0-q4 (five: enough to take traffic); n battles b on q5-q7


def _results(model: str, ids: list[str], texts: list[str], scores: list[float], cost: float) -> pd.DataFrame:
    return pd.DataFrame({"prompt_id": ids, "prompt": texts, "model": model, "score": scores, "cost": cost})


def _champion(db_path: Path, tmp_path: Path, embedder_id: str | None = None):
    """Models a, b on six validation prompts; a K = 2 champion fitted on their TF-IDF embeddings, the embedder
    stored with it (embedder_id: claim another one for the router). (embedder, centroids) back."""
    _results("a", OLD, OLD_TEXTS, [1, 1, 1, 0, 0, 0], 1.0).to_csv(tmp_path / "a.csv", index=False)
    _results("b", OLD, OLD_TEXTS, [0, 0, 0, 1, 1, 1], 3.0).to_csv(tmp_path / "b.csv", index=False)
    for name in ("a.csv", "b.csv"):
        ingest(db_path, tmp_path / name, split="val", progress=False)
    embedder = fit_tfidf(OLD_TEXTS + NEW_TEXTS, dim=4, seed=0, progress=False)
    X = np.asarray(embedder.encode(OLD_TEXTS), dtype=np.float32)
    centroids = fit_centroids(X, k=2, seed=0)
    clusters = centroids.assign(X)
    losses = np.array([[0, 0, 0, 1, 1, 1], [1, 1, 1, 0, 0, 0]], dtype=float)
    psi = np.array([[losses[m, clusters == k].mean() for k in range(2)] for m in range(2)])
    counts = np.array([[int((clusters == k).sum()) for k in range(2)]] * 2)
    router = Router(embedder_id or embedder.embedder_id, ("a", "b"), np.array([1.0, 3.0]), psi, centroids, counts)
    with store.session(db_path, "test-setup") as s:
        store.execute(s.con, "assign_splits")
        store.write_frame(s.con, "cluster_assignments", pd.DataFrame(
            {"clustering_id": clustering_id_of(centroids), "prompt_id": OLD, "cluster": clusters.astype(np.int32)}))
        registry.save_router_version(s.con, registry.NewVersion(
            router, "tfidf-parent", clustering_id_of(centroids), "kmeans", "fp", val_area=0.5, promoted=True,
            reason="test champion", centroids=centroids, embedder=embedder))
        if embedder_id is not None:  # a stored state under the router's id that restores another embedder
            store.write_frame(s.con, "fitted_embedders", pd.DataFrame(
                [{"embedder_id": embedder_id, "state": embedder_state(embedder), "created_at": pd.Timestamp.now()}]))
    return embedder, centroids


def _onboard(db_path: Path, models: list[str]) -> OnboardResult:
    with store.session(db_path, "onboard") as s:
        return onboard_models(s.con, models)


def _assigned(db_path: Path, clustering_id: str, ids: list[str]) -> dict[str, int]:
    with store.opened(db_path, read_only=True) as con:
        rows = con.execute("select prompt_id, cluster from cluster_assignments where clustering_id = ? and "
                           "list_contains(?, prompt_id)", [clustering_id, ids]).fetchall()
    return dict(rows)


def test_new_prompts_of_results_and_battles_are_embedded_and_assigned_to_the_frozen_clusters(db_path, tmp_path):
    embedder, centroids = _champion(db_path, tmp_path)
    _results("c", NEW[:5], NEW_TEXTS[:5], C_SCORES, 2.0).to_csv(tmp_path / "c.csv", index=False)
    ingest(db_path, tmp_path / "c.csv", split="val", progress=False)
    battles = pd.DataFrame({"prompt_id": NEW[5:], "prompt": NEW_TEXTS[5:], "model_a": "n", "model_b": "b",
                            "winner": ["model_a", "model_b", "model_a"], "split": "val"})
    battles.to_csv(tmp_path / "n.csv", index=False)
    ingest(db_path, tmp_path / "n.csv", progress=False)
    _set_cost(db_path, "n", 0.5)
    result = _onboard(db_path, ["c", "n"])
    assert result.models == ("c", "n") and result.embedded_prompts == 8  # 5 of results + 3 of battles
    expected = centroids.assign(np.asarray(embedder.encode(NEW_TEXTS), dtype=np.float32))
    assert _assigned(db_path, clustering_id_of(centroids), NEW) == dict(zip(NEW, expected.tolist(), strict=True))
    with store.opened(db_path, read_only=True) as con:
        child = registry.load_champion(con).router
    c_losses, c_clusters = 1.0 - np.array(C_SCORES, dtype=float), expected[:5]
    assert child.psi_counts[2].tolist() == [int((c_clusters == k).sum()) for k in range(2)]
    for k in range(2):
        if (c_clusters == k).any():
            assert child.psi[2, k] == pytest.approx(c_losses[c_clusters == k].mean())
    assert _onboard(db_path, ["c", "n"]).embedded_prompts == 0  # assigned once, never embedded again


def test_an_embedder_that_is_not_the_routers_is_refused(db_path, tmp_path):
    _champion(db_path, tmp_path, embedder_id="tfidf:another-fit")
    _results("c", NEW[:5], NEW_TEXTS[:5], C_SCORES, 2.0).to_csv(tmp_path / "c.csv", index=False)
    ingest(db_path, tmp_path / "c.csv", split="val", progress=False)
    with pytest.raises(EmbedderMismatch, match="tfidf:another-fit"):  # nothing embedded with it
        _onboard(db_path, ["c"])


def test_results_on_training_prompts_only_give_no_psi_row(db_path, tmp_path):
    _champion(db_path, tmp_path)
    _results("t", NEW, NEW_TEXTS, [1] * len(NEW), 2.0).to_csv(tmp_path / "t.csv", index=False)
    ingest(db_path, tmp_path / "t.csv", split="train", progress=False)
    with pytest.raises(OnboardError, match=r"^models \['t'\] have no results or battles on validation prompts: "
                                           "nothing to build Psi from$"):
        _onboard(db_path, ["t"])
