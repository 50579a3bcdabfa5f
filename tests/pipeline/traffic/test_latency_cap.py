"""Latency in the choice: the model_latency views over the calls the request path recorded, and a max latency
(`--max-latency`, `uniroute/max-latency-S`, the pyfunc's `max_latency`, RoutingRequest) that leaves slower models
out of the choice and its fall-backs, keeps models with no recorded latency (and says so), and refuses bad values
in one line. The toy champion: cheap (cost 1) best on easy prompts, big (cost 10) best on "hard" ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.gateway.harness import ToyEmbedder, publish_current
from tests.pipeline.toy_store import save_toy_champion
from tests.pipeline.traffic.latency_records import record_calls
from uniroute import operations, store
from uniroute.cli import app
from uniroute.gateway.endpoint import Gateway
from uniroute.gateway.live import LiveRouter, requested_setting
from uniroute.operations.context import Context
from uniroute.pipeline.serving import route as serving
from uniroute.pipeline.serving.calibration import Calibration
from uniroute.pipeline.serving.route import RoutingError, RoutingRequest, route_batch
from uniroute.settings import Settings

runner = CliRunner()
HARD = "a hard question"


def _toy(tmp_path: Path, calls: list[tuple[str, float, str | None]]) -> LiveRouter:
    db = save_toy_champion(tmp_path / "uniroute.duckdb")
    record_calls(db, calls)
    publish_current(db, tmp_path / "published")
    return LiveRouter(tmp_path / "published", db, lambda source: ToyEmbedder())


def test_the_views_give_each_models_latency_of_its_successful_calls(tmp_path: Path) -> None:
    db = save_toy_champion(tmp_path / "uniroute.duckdb")
    record_calls(db, [("cheap", s, None) for s in (1.0, 2.0, 3.0, 4.0)] + [("cheap", 10.0, "Timeout")])
    record_calls(db, [("big", 1.0, None)] * 20, cluster=1, prefix="b")
    with store.opened(db, read_only=True) as con:
        per_model = con.execute("select model, calls, failed_calls, failure_share, latency_p50_s, latency_p90_s, "
                                "latency_mean_s, ttft_mean_s from model_latency order by model").fetchall()
        per_cluster = con.execute("select router_id, cluster, model, calls, latency_p50_s, model_latency_p50_s "
                                  "from model_latency_by_cluster").fetchall()
    # The failed 10 s call counts as a failure, never as latency: median of 1, 2, 3, 4 s is 2.5 s.
    assert per_model == [("big", 20, 0, 0.0, 1.0, 1.0, 1.0, 0.5),
                         ("cheap", 4, 1, 0.2, 2.5, pytest.approx(3.7), 2.5, 1.25)]
    # cheap's 4 calls in cluster 0 are too few for a cluster's latency; big's 20 in cluster 1 are enough.
    assert per_cluster == [("r-001", 1, "big", 20, 1.0, 1.0)]


def test_a_max_latency_leaves_a_slow_model_out_of_the_choice_and_the_fallbacks(tmp_path: Path) -> None:
    loaded = _toy(tmp_path, [("big", 3.0, None), ("cheap", 0.2, None)]).loaded
    assert loaded.calibration.latency == {"big": 3.0, "cheap": 0.2}
    quality = loaded.decide(HARD, requested_setting("uniroute/lambda-0")).frame().iloc[0]
    assert quality["model"] == "big" and list(quality["fallbacks"]) == ["cheap"]
    for name in ("uniroute/lambda-0/max-latency-1", "uniroute/max-latency-1"):
        setting = requested_setting(name)
        for _ in range(2):  # the second decision of a setting routes at its resolved lambda: still capped
            capped = loaded.decide(HARD, setting).frame().iloc[0]
            assert capped["model"] == "cheap" and list(capped["fallbacks"]) == [] and capped["max_latency"] == 1.0
    # A generous cap changes nothing.
    assert loaded.decide(HARD, requested_setting("uniroute/lambda-0/max-latency-5")).columns["model"][0] == "big"
    # A conversation pinned to the slow model does not go back to it under the cap, nor does any fall-back.
    request = requested_setting("uniroute/max-latency-1")
    tried, above, _ = Gateway.candidates(None, loaded, request, "cheap", [], "big")  # type: ignore[arg-type]
    assert tried == ["cheap"] and above == ["big"]


def test_a_model_without_recorded_latency_stays_a_candidate_and_is_named(tmp_path: Path) -> None:
    loaded = _toy(tmp_path, [("cheap", 5.0, None)]).loaded  # big was never called: its latency is unknown
    batch = route_batch(loaded.source, ["an easy one"], lam=0.0, embedder=loaded.embedder,
                        calibration=loaded.calibration, max_latency=1.0)
    assert batch.decisions["model"].iloc[0] == "big" and list(batch.decisions["fallbacks"].iloc[0]) == []
    assert batch.latency_note == ("max latency 1 s (median of recorded calls): left out cheap (5 s); kept with no "
                                  "recorded latency: big")
    # With no latency recorded at all, the cap leaves nothing out.
    free = route_batch(loaded.source, ["an easy one"], lam=0.0, embedder=loaded.embedder, calibration=Calibration(),
                       max_latency=1.0)
    assert free.decisions["model"].iloc[0] == "cheap" and list(free.decisions["fallbacks"].iloc[0]) == ["big"]


def test_a_cap_below_every_recorded_latency_is_refused_naming_the_fastest(tmp_path: Path) -> None:
    loaded = _toy(tmp_path, [("cheap", 2.0, None), ("big", 3.0, None)]).loaded
    with pytest.raises(RoutingError, match=r"^max latency 1 s: every pool model's recorded median latency is above "
                                           r"it \(fastest: cheap at 2 s\); ask for a higher cap$"):
        loaded.decide(HARD, requested_setting("uniroute/max-latency-1"))


@pytest.mark.parametrize("value", [0, -1, float("nan"), float("inf"), "fast"])
def test_a_bad_max_latency_is_a_one_line_error(value: object) -> None:
    with pytest.raises(RoutingError, match=r"^max latency must be a (finite )?number of seconds > 0, not ") as bad:
        RoutingRequest(max_latency=value)  # type: ignore[arg-type]
    assert "\n" not in str(bad.value)


def test_the_model_field_combines_a_setting_with_a_max_latency() -> None:
    assert requested_setting("uniroute/max-latency-2.5") == RoutingRequest(max_latency=2.5)
    assert requested_setting("uniroute/budget-0.3/max-latency-2") == RoutingRequest(budget=0.3, max_latency=2.0)
    assert requested_setting("uniroute/max-cost-0.002/max-latency-1") == RoutingRequest(max_cost=0.002,
                                                                                        max_latency=1.0)
    for bad in ("uniroute/max-latency-0", "uniroute/max-latency-2/max-latency-3", "uniroute/max-latency-",
                "uniroute/lambda-1/budget-0.3", "uniroute/budget-0.3/"):
        with pytest.raises(RoutingError):
            requested_setting(bad)


def test_route_explain_shows_each_candidates_latency_and_the_cap(traffic_home: Path, prompts: list[str]) -> None:
    settings = Settings(home=traffic_home, mlflow=False)
    source = serving.routing_source(settings.db_path, settings.published_dir)
    ctx = Context.of(settings)
    chosen = operations.route(ctx, prompts[:1], RoutingRequest(lam=0.0), record=False).decisions.iloc[0]
    other = [m for m in source.pool if m != chosen["model"]]
    # The chosen model is slow, one other fast, the rest never called.
    record_calls(settings.db_path, [(chosen["model"], 4.0, None), (other[0], 0.5, None)],
                 router_id=source.router_id)
    capped = operations.route(ctx, prompts[:1], RoutingRequest(lam=0.0, max_latency=2.0), record=False)
    assert capped.decisions["model"].iloc[0] != chosen["model"]
    assert chosen["model"] not in list(capped.decisions["fallbacks"].iloc[0])
    assert f"left out {chosen['model']} (4 s)" in capped.latency_note

    cli = runner.invoke(app, ["route", prompts[0], "--lambda", "0", "--max-latency", "2", "--explain", "--no-log"],
                        catch_exceptions=False)
    assert cli.exit_code == 0, cli.output
    assert "max latency 2 s: models with a recorded median latency above it left out" in cli.stdout
    assert "latency s" in cli.stdout and "unknown" in cli.stdout and "0.5" in cli.stdout
    assert f"left out {chosen['model']} (4 s)" in cli.stderr
    as_json = runner.invoke(app, ["route", prompts[0], "--lambda", "0", "--explain", "--no-log", "--json"],
                            catch_exceptions=False)
    terms = {t["model"]: t["latency_s"] for t in json.loads(as_json.stdout)[0]["explain"]}
    assert terms[chosen["model"]] == 4.0 and terms[other[0]] == 0.5 and all(
        terms[m] is None for m in other[1:])

    bad = runner.invoke(app, ["route", prompts[0], "--max-latency", "0", "--no-log"])
    assert bad.exit_code != 0 and len(bad.stderr.strip().splitlines()) == 1
    assert "max latency must be a finite number of seconds > 0, not 0.0" in bad.stderr


def test_the_served_models_max_latency_param_is_read_as_the_others() -> None:
    from uniroute.pipeline.tracking.pyfunc import UNUSED_MAX_LATENCY, request_of

    assert request_of({"max_latency": 2.0, "lambda": 0.5}) == RoutingRequest(lam=0.5, max_latency=2.0)
    assert request_of({"max_latency": UNUSED_MAX_LATENCY}).max_latency is None
    with pytest.raises(RoutingError, match="max latency must be"):
        request_of({"max_latency": -2.0})
