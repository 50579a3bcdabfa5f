"""Per-cluster model costs on every surface: a build stores them in the router (the validation rows' mean cost per
model and cluster over the model's mean), and route, route --file, the pyfunc, replay and the replay flow turn a
max cost into the lambda lambda_for_max_cost gives on them, not the one of each model's one cost."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from uniroute import operations, store
from uniroute.cli import app
from uniroute.operations.context import Context
from uniroute.pipeline.serving import route as serving
from uniroute.pipeline.serving.calibration import Calibration
from uniroute.pipeline.serving.route import RoutingRequest
from uniroute.pipeline.tracking.pyfunc import router_model_class
from uniroute.pipeline.traffic.replay import ReplaySetting, ReplayWindow, replay, replay_router, window_embeddings
from uniroute.routers.budgets.cost_cap import lambda_for_max_cost
from uniroute.routers.tables import validation_proxy
from uniroute.settings import Settings

runner = CliRunner()


def _source(home: Path) -> serving.RoutingSource:
    settings = Settings(home=home, mlflow=False)
    return serving.routing_source(settings.db_path, settings.published_dir)


def _telling_cap(router, X: np.ndarray) -> tuple[float, float]:
    """(cap, lambda) where the per-cluster costs give another lambda than each model's one cost on X."""
    one_cost = replace(router, cost_scale=None)
    clusters = router.assigner.assign(X)
    # The mean costs the routing takes along lambda, on either estimate: a cap at one of them sits on a step.
    steps = set()
    for lam in np.geomspace(1e-3, 1e3, 300) / router.costs.max():
        chosen = router.route(X, float(lam))
        steps |= {float(router.costs[chosen].mean()),
                  float((router.costs[chosen] * router.cost_scale[chosen, clusters]).mean())}
    for cap in sorted(c for c in steps if c >= router.costs.min()):
        lam = lambda_for_max_cost(router, X, float(cap))
        if lam != lambda_for_max_cost(one_cost, X, float(cap)):
            return float(cap), lam
    raise AssertionError("per-cluster costs never move the lambda on this mix")


def test_a_build_stores_each_cells_mean_cost_over_the_models_mean(traffic_home):
    router = _source(traffic_home).router
    with store.opened(traffic_home / "uniroute.duckdb", read_only=True) as con:
        champion = con.execute("select router_id, clustering_id from routers where promoted "
                               "order by created_at desc limit 1").df().iloc[0]
        rows = con.execute("""
            select r.model, a.cluster, avg(r.cost) as cell, sum(r.cost) as s, count(*) as n
            from results r join cluster_assignments a on a.prompt_id = r.prompt_id
            join prompt_splits p on p.prompt_id = r.prompt_id and p.split = 'val'
            where a.clustering_id = ? group by all""", [champion.clustering_id]).df()
    assert router.cost_scale is not None and router.cost_scale.shape == router.psi.shape
    mean = rows.groupby("model").s.sum() / rows.groupby("model").n.sum()
    for r in rows.itertuples():
        i = router.models.index(r.model)
        assert router.cost_scale[i, r.cluster] == pytest.approx(r.cell / mean[r.model], rel=1e-9)
        # No price in force: the router's cost is the validation mean, so cost x scale is the cell's mean cost.
        assert router.costs[i] * router.cost_scale[i, r.cluster] == pytest.approx(r.cell, rel=1e-9)
    assert not np.allclose(router.cost_scale, 1.0)  # the synthetic rows' costs vary per prompt


def test_route_route_file_and_the_pyfunc_cap_on_the_per_cluster_costs(traffic_home, prompts, tmp_path):
    source = _source(traffic_home)
    cap, lam = _telling_cap(source.router, validation_proxy(source.router))  # no traffic yet: validation mix
    routed = operations.route(Context.of(Settings(home=traffic_home, mlflow=False)), prompts[:20],
                              RoutingRequest(max_cost=cap), record=False)
    assert set(routed.decisions.lam) == {lam}
    batch = tmp_path / "p.jsonl"
    batch.write_text("".join(json.dumps({"prompt": p}) + "\n" for p in prompts[:5]))
    cli = runner.invoke(app, ["route", "--file", str(batch), "--max-cost", repr(cap), "--no-log"],
                        catch_exceptions=False)
    assert cli.exit_code == 0, cli.output
    assert {json.loads(line)["lam"] for line in cli.stdout.splitlines()} == {lam}
    served = router_model_class()()
    served.router, served.router_id, served.X_val = source.router, source.router_id, None
    served.embedder = source.embedder()
    answered = served.predict(None, {"prompt": prompts[:5]}, params={"max_cost": cap})
    assert set(answered.lam) == {lam}
    assert serving.calibrated_lambda(source.router, source.pool, None, None, cap, Calibration())[0] == lam


@pytest.fixture
def logged(traffic_home, prompts, tmp_path) -> None:
    batch = tmp_path / "all.jsonl"
    batch.write_text("".join(json.dumps({"prompt": p}) + "\n" for p in prompts))
    assert runner.invoke(app, ["route", "--file", str(batch)], catch_exceptions=False).exit_code == 0
    assert runner.invoke(app, ["inbox", "--no-onboard"], catch_exceptions=False).exit_code == 0


def test_replay_and_its_flow_cap_on_the_per_cluster_costs(traffic_home, logged, prefect_harness, monkeypatch):
    from flows.replay import replay_traffic

    with store.opened(traffic_home / "uniroute.duckdb", read_only=True) as con:
        using = replay_router(con, "champion")
        X = window_embeddings(con, ReplayWindow())
        cap, lam = _telling_cap(using.router, X)
        result, traffic = replay(con, using, ReplayWindow(), ReplaySetting(max_cost=cap))
    assert set(traffic.lam) == {lam}
    chosen = np.asarray(traffic.chosen)
    clusters = using.router.assigner.assign(X)
    expected = using.router.costs[chosen] * using.router.cost_scale[chosen, clusters]
    assert expected.mean() <= cap * (1 + 1e-12)
    monkeypatch.setenv("UNIROUTE_HOME", str(traffic_home))
    flowed = replay_traffic(max_cost=cap)
    pd.testing.assert_frame_equal(pd.DataFrame(flowed["models"]), pd.DataFrame(result["models"]))
