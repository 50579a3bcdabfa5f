"""The LLM-similarity map's numbers: hand-checked cosines, the clustering order, near duplicates, the SQL view."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from tests.pipeline.pool.test_onboard import champion_db  # noqa: F401 (fixture)
from uniroute import store
from uniroute.routers.cluster.psi import Psi
from uniroute.routers.cluster.similarity import model_similarity


def test_cosines_order_and_near_duplicates_by_hand() -> None:
    psi = Psi(
        ("far", "twin-a", "other", "twin-b"),
        np.array([[0.9, 0.1], [0.3, 0.4], [0.8, 0.3], [0.3, 0.4]]),
        np.full((4, 2), 100),
    )
    sim = model_similarity(psi)
    position = {m: i for i, m in enumerate(sim.models)}
    assert abs(position["twin-a"] - position["twin-b"]) == 1  # alike models sit side by side
    i, j = position["twin-a"], position["far"]
    # Centred rows: each cluster's pool mean (0.575, 0.3) is taken out first.
    twin, far = np.array([0.3 - 0.575, 0.4 - 0.3]), np.array([0.9 - 0.575, 0.1 - 0.3])
    expected = twin @ far / (np.linalg.norm(twin) * np.linalg.norm(far))
    assert sim.cosine[i, j] == pytest.approx(expected) and sim.cosine[i, i] == pytest.approx(1.0)
    assert sim.mean_abs_difference[i, j] == pytest.approx((0.6 + 0.3) / 2)
    # twin-a and twin-b have identical rows: near duplicates; other pairs differ by far more than sampling.
    pairs = sim.near_duplicates()
    assert [{p["model_a"], p["model_b"]} for p in pairs] == [{"twin-a", "twin-b"}]
    noise = math.sqrt(2 / math.pi) * np.mean([math.sqrt(q * (1 - q) * 2 / 100) for q in (0.7, 0.6)])
    assert pairs[0]["sampling_difference"] == pytest.approx(noise)


def test_few_prompts_make_a_small_difference_indistinguishable_from_sampling() -> None:
    rows = np.array([[0.30, 0.50], [0.35, 0.45]])
    assert model_similarity(Psi(("a", "b"), rows, np.full((2, 2), 10))).near_duplicates()
    assert not model_similarity(Psi(("a", "b"), rows, np.full((2, 2), 10_000))).near_duplicates()


def test_a_model_better_everywhere_by_a_little_is_no_duplicate_once_the_clusters_add_up() -> None:
    """The 8B and 51B models of one family: accuracies .563 and .611, alike in which clusters are hard."""
    hardness = np.linspace(0.2, 0.7, 20)
    rows = np.array([hardness + 0.024, hardness - 0.024])  # 0.048 apart in every cluster
    sim = model_similarity(Psi(("8b", "51b"), rows, np.full((2, 20), 60)))
    assert not sim.near_duplicates()  # per cell within sampling noise, overall z about 2.4
    assert abs(sim.z[0, 1]) > 1.96 and sim.mean_abs_difference[0, 1] < sim.sampling_difference[0, 1]
    # With a third model the centred rows show what distinguishes them: the two sit on either side.
    three = model_similarity(Psi(("8b", "51b", "mid"), np.vstack([rows, hardness]), np.full((3, 20), 60)))
    index = {m: i for i, m in enumerate(three.models)}
    assert three.cosine[index["8b"], index["51b"]] < 0


def test_the_sql_view_computes_the_same_numbers(champion_db) -> None:  # noqa: F811
    with store.opened(champion_db, read_only=True) as con:
        view = con.execute("select * from model_similarity order by model_a, model_b").df()
        psi = con.execute("select model, cluster, loss, n from psi p join champion_router c using (router_id) "
                          "order by model, cluster").df()
    wide = psi.pivot(index="model", columns="cluster", values="loss")
    counts = psi.pivot(index="model", columns="cluster", values="n")
    sim = model_similarity(Psi(tuple(wide.index), wide.to_numpy(), counts.to_numpy()))
    index = {m: i for i, m in enumerate(sim.models)}
    assert len(view) == 2  # (a, b) and (b, a)
    for row in view.itertuples():
        i, j = index[row.model_a], index[row.model_b]
        assert row.cosine == pytest.approx(sim.cosine[i, j])
        assert row.mean_abs_difference == pytest.approx(sim.mean_abs_difference[i, j])
        assert row.sampling_difference == pytest.approx(sim.sampling_difference[i, j])
        assert row.z == pytest.approx(sim.z[i, j]) and row.chi2 == pytest.approx(sim.chi2[i, j])
        assert row.chi2_limit == pytest.approx(sim.chi2_limit)
        assert row.near_duplicate == any({row.model_a, row.model_b} == {p["model_a"], p["model_b"]}
                                         for p in sim.near_duplicates())


def test_cli_draws_the_map_of_a_log_and_of_the_champion(champion_db, tmp_path, monkeypatch) -> None:  # noqa: F811
    from typer.testing import CliRunner

    from tests.synthetic_logs import synthetic_long
    from uniroute.cli import app

    log = tmp_path / "log.parquet"
    synthetic_long(120).assign(cost=None).to_parquet(log)  # no costs: every LLM still gets a Psi row
    monkeypatch.setenv("UNIROUTE_HOME", str(champion_db.parent))
    png = tmp_path / "map.png"
    result = CliRunner().invoke(app, ["report", "--similarity", str(png), "--data", str(log), "--k", "4",
                                      "--embedder", "tfidf"])
    assert result.exit_code == 0, result.output
    saved = pd.read_json(png.with_suffix(".json"), typ="series")
    assert len(saved["models"]) == 8 and png.stat().st_size > 1000
    champion_png = tmp_path / "champion.png"
    result = CliRunner().invoke(app, ["report", "--similarity", str(champion_png)])
    assert result.exit_code == 0, result.output
    assert "champion router kmeans-parent" in pd.read_json(champion_png.with_suffix(".json"), typ="series")["title"]
