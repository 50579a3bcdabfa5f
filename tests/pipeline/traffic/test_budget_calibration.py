"""Budgets and --max-cost on traffic: with enough recorded decisions in the window, the lambda of a budget or a cap
is computed on the traffic's stored embeddings (and the route says so); with too few, on the validation prompts.
On traffic unlike the validation mix, a cap calibrated on validation breaks; calibrated on traffic it holds."""

from __future__ import annotations

import numpy as np
import pandas as pd
from typer.testing import CliRunner

from uniroute import operations, store
from uniroute.cli import app
from uniroute.operations.context import Context
from uniroute.pipeline.serving import route as serving
from uniroute.pipeline.serving.calibration import Calibration, TrafficWindow, calibration_at
from uniroute.pipeline.serving.route import RoutingRequest
from uniroute.settings import Settings

runner = CliRunner()


def _skewed_traffic(settings: Settings, prompts: list[str]) -> list[str]:
    """The prompts that stay on dearer models longest as lambda grows (expected cost above the mean at the first
    lambda where the prompts' choices differ), each sent three times: a mix dearer than the validation prompts."""
    ctx = Context.of(settings)
    top = float(serving.routing_source(settings.db_path, settings.published_dir).router.costs.max())
    for lam in np.geomspace(0.01, 100, 41) / top:
        cost = operations.route(ctx, prompts, RoutingRequest(lam=float(lam)), record=False).decisions.expected_cost
        if cost.nunique() > 1:
            return [f"{p} {i}" for i in range(3) for p, c in zip(prompts, cost, strict=True) if c > cost.mean()]
    raise AssertionError("every prompt routes alike at every lambda")


def test_a_cap_holds_on_the_traffic_it_was_calibrated_on_and_says_so(traffic_home, prompts, monkeypatch):
    monkeypatch.setenv("UNIROUTE_BUDGET_TRAFFIC_MIN_DECISIONS", "100")
    settings = Settings(home=traffic_home, mlflow=False, budget_traffic_min_decisions=100)
    ctx = Context.of(settings)
    source = serving.routing_source(settings.db_path, settings.published_dir)
    costs = source.router.costs
    caps = np.linspace(costs.min() * 1.05, costs.max() * 0.95, 6)
    before = calibration_at(settings.db_path, source.router.embedder_id, ctx.traffic_window)
    assert not before.on_traffic and before.source.startswith("validation prompts (traffic window 7 days: 0 decisions")

    traffic = _skewed_traffic(settings, prompts)
    operations.route(ctx, traffic, RoutingRequest(lam=0.0))  # recorded to the spool ...
    assert runner.invoke(app, ["inbox", "--no-onboard"], catch_exceptions=False).exit_code == 0  # ... then stored
    after = calibration_at(settings.db_path, source.router.embedder_id, ctx.traffic_window)
    assert after.on_traffic and after.X.shape[0] == len(traffic)
    assert after.source.startswith(f"traffic window: {len(traffic)} decisions since ")
    assert not calibration_at(settings.db_path, source.router.embedder_id,
                              TrafficWindow(min_decisions=len(traffic) + 1)).on_traffic

    on_validation = []
    for cap in caps:
        routed = operations.route(ctx, traffic, RoutingRequest(max_cost=float(cap)), record=False)
        assert routed.calibration == after.source and set(routed.decisions.setting) == {"max cost"}
        assert routed.decisions.expected_cost.mean() <= cap * (1 + 1e-9)
        assert set(routed.decisions.max_cost) == {cap}
        by_validation = serving.route_texts(source, traffic, max_cost=float(cap), calibration=Calibration())
        on_validation.append(by_validation.expected_cost.mean() / cap)
    # The validation mix is cheaper than this traffic: a cap calibrated there overspends on it.
    assert max(on_validation) > 1.05, on_validation

    cli = runner.invoke(app, ["route", *traffic[:2], "--max-cost", str(caps[2]), "--no-log", "--json"],
                        catch_exceptions=False)
    assert cli.exit_code == 0 and "max cost calibrated on the traffic window: " in cli.stderr, cli.output
    budget = operations.route(ctx, traffic, RoutingRequest(budget=0.5), record=False)
    assert budget.calibration == after.source
    assert budget.decisions.expected_cost.mean() <= 0.5 * costs.max() * (1 + 1e-9)
    pd.testing.assert_series_equal(budget.decisions.lam, pd.Series([budget.decisions.lam.iloc[0]] * len(traffic),
                                                                    name="lam"))

    # A publication's budgets say their mix: the template's (no traffic) the validation prompts, now the traffic's.
    published = _sql(settings, "select distinct calibration from current_budgets").calibration.tolist()
    assert len(published) == 1 and published[0].startswith("validation prompts (traffic window 7 days: 0 decisions")
    assert runner.invoke(app, ["publish", "--force"], catch_exceptions=False).exit_code == 0
    assert _sql(settings, "select distinct calibration from current_budgets").calibration.tolist() == [after.source]
    report = runner.invoke(app, ["report", "--budgets", str(settings.home / "b.png")], catch_exceptions=False)
    assert report.exit_code == 0 and f"on the {after.source}" in report.stdout, report.output


def _sql(settings: Settings, sql: str) -> pd.DataFrame:
    with store.opened(settings.db_path, read_only=True) as con:
        return con.execute(sql).df()


def test_routing_never_fails_for_want_of_its_calibration(tmp_path):
    window = TrafficWindow(min_decisions=1)
    missing = calibration_at(tmp_path / "none.duckdb", "e1", window)
    assert not missing.on_traffic and missing.source.startswith("validation prompts (no store at ")
    (tmp_path / "junk.duckdb").write_bytes(b"not a database" * 100)
    junk = calibration_at(tmp_path / "junk.duckdb", "e1", window)
    assert not junk.on_traffic and junk.source.startswith("validation prompts (the store's traffic is not readable")
