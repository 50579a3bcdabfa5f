"""Pairwise evidence in the pipeline: a build over a mixed pool, onboarding a newcomer from its battles."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.helpers import build, ingest, onboard
from tests.pipeline.pool.test_onboard import PROMPTS, champion, champion_db, version  # noqa: F401 (fixture)
from uniroute import store
from uniroute.ingest import set_default_cost
from uniroute.pipeline.pool.onboard import OnboardError
from uniroute.routers.cluster.psi_battles import psi_from_battles


def _battles_csv(path, rows: list[tuple[str, str, str, str]]):
    pd.DataFrame(rows, columns=["prompt_id", "model_a", "model_b", "winner"]).assign(
        prompt=lambda f: [f"question number {p[1:]}" for p in f.prompt_id], split="val").to_csv(path, index=False)
    return path


def _set_cost(db_path, model: str, cost: float) -> None:
    with store.session(db_path, "set-cost") as s:
        set_default_cost(s.con, model, cost)


def test_a_newcomer_with_battles_only_joins_without_refitting_the_pool(champion_db, tmp_path):  # noqa: F811
    # n beats b on p0-p2 (cluster 0, where b is right one time in three) and loses to it on p3-p5 (cluster 1).
    rows = [(p, "n", "b", "model_a") for p in PROMPTS[:3]] + [(p, "n", "b", "model_b") for p in PROMPTS[3:]]
    ingest(champion_db, _battles_csv(tmp_path / "n.csv", rows), progress=False)
    with pytest.raises(OnboardError, match="no cost"):
        onboard(champion_db, ["n"])
    _set_cost(champion_db, "n", 0.5)
    parent = champion(champion_db).router
    result = onboard(champion_db, ["n"])
    child = version(champion_db, result.router_id).router
    assert child.models == ("a", "b", "n") and result.embedded_prompts == 0  # the prompts had clusters
    np.testing.assert_array_equal(child.psi[:2], parent.psi)  # nobody else refitted
    assert child.costs[2] == 0.5 and child.psi_counts[2].tolist() == [3, 3]
    assert child.psi[2, 0] < parent.psi[1, 0] and child.psi[2, 1] > parent.psi[1, 1]
    # The same numbers as the Bradley-Terry fit of those battles against b's (and a's) frozen row.
    expected = psi_from_battles(pd.DataFrame({"cluster": [0, 1], "model_a": ["b", "b"], "model_b": ["n", "n"],
                                              "n": [3, 3], "w": [0.0, 3.0]}), 2,
                                anchors=_pool(parent), free=["n"])
    np.testing.assert_allclose(child.psi[2], expected.values[0])
    assert onboard(champion_db, ["n"]).models == ()  # idempotent: the champion already routes n so


def _pool(router):
    from uniroute.routers.cluster.psi import Psi

    return Psi(router.models, router.psi, router.psi_counts)


def test_a_newcomer_whose_battles_are_all_against_strangers_is_refused(champion_db, tmp_path):  # noqa: F811
    rows = [(p, "n", "stranger", "model_a") for p in PROMPTS]
    ingest(champion_db, _battles_csv(tmp_path / "n.csv", rows), progress=False)
    _set_cost(champion_db, "n", 0.5)
    with pytest.raises(OnboardError, match=r"models \['n'\] have no battle against a model of the pool"):
        onboard(champion_db, ["n"])


@pytest.mark.slow
def test_a_build_gives_battle_only_models_psi_rows_on_the_accuracy_scale(db_path, tmp_path):
    from uniroute.synth import write_synthetic_logs

    write_synthetic_logs(tmp_path / "synth", n_prompts=1500, n_models=6, n_topics=4, seed=3, with_split=True)
    logs = pd.read_parquet(tmp_path / "synth" / "logs.parquet")
    hidden = sorted(logs.model.unique())[2]
    logs[logs.model != hidden].to_parquet(tmp_path / "pointwise.parquet", index=False)
    ingest(db_path, tmp_path / "pointwise.parquet", progress=False)
    # The hidden model's validation evidence is arena-style battles: one random opponent per prompt.
    rng = np.random.default_rng(0)
    val = logs[logs.split == "val"]
    wide = val.pivot(index="prompt_id", columns="model", values="score")
    others = [m for m in wide.columns if m != hidden]
    rows = []
    for prompt_id, row in wide.iterrows():
        for opponent in rng.choice(others, 3, replace=False):
            s, t = row[hidden], row[opponent]
            rows.append((prompt_id, hidden, opponent, "model_a" if s > t else "model_b" if s < t else "tie"))
    battles = pd.DataFrame(rows, columns=["prompt_id", "model_a", "model_b", "winner"])
    texts = val.drop_duplicates("prompt_id").set_index("prompt_id")["prompt"]
    battles.assign(prompt=battles.prompt_id.map(texts), split="val").to_csv(tmp_path / "battles.csv", index=False)
    ingest(db_path, tmp_path / "battles.csv", progress=False)
    _set_cost(db_path, hidden, float(logs[logs.model == hidden].cost.mean()))
    result = build(db_path, "tfidf", seed=0)
    assert hidden in result.models
    with store.opened(db_path, read_only=True) as con:
        psi = con.execute("select cluster, loss, n from psi where router_id = ? and model = ? order by cluster",
                          [result.router_id, hidden]).df()
        clusters = con.execute("select a.prompt_id, a.cluster from cluster_assignments a join routers r on "
                               "r.clustering_id = a.clustering_id where r.router_id = ?", [result.router_id]).df()
    scores = val[val.model == hidden].merge(clusters, on="prompt_id").groupby("cluster")["score"]
    truth, prompts = scores.mean().reindex(psi.cluster), scores.size().reindex(psi.cluster)
    # Psi from battles against pointwise anchors sits on the accuracy scale of the pointwise rows: each cluster
    # within 3 standard errors of the accuracy measured on its prompts (the battles' only evidence is those
    # prompts, three comparisons each). The served hierarchy measures the rows on 2K = 16 cells of 3-27 prompts.
    error = np.abs((1 - psi["loss"].to_numpy()) - truth.to_numpy())
    # The standard error at the Agresti-Coull estimate (two successes and two failures added): a cell whose
    # prompts the model all got right (or all wrong) has a binomial standard error of 0, which no estimate from
    # three battles a prompt can meet.
    n = prompts.to_numpy()
    p = (truth.to_numpy() * n + 2) / (n + 4)
    tolerance = 3 * np.sqrt(p * (1 - p) / n)
    assert (error < tolerance).all(), (psi, truth, tolerance)
    # The hidden model's best cluster by its battles is one its measured accuracy cannot tell from the best: with
    # 3-27 prompts a cell the exact argmax is noise.
    best = int(np.argmax(1 - psi["loss"].to_numpy()))
    assert truth.to_numpy().max() - truth.to_numpy()[best] < tolerance[best], (psi, truth, tolerance)
    assert psi["n"].sum() == len(rows)  # every battle counted once, in its prompt's cluster
