"""The gateway's parts without a server: the `model` field's settings, deployments files, the coverage line, the
cap on fall-backs, error texts without keys, a price's cost, where a decision runs."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.gateway.harness import ToyEmbedder, publish_current, set_prices
from tests.pipeline.toy_store import save_toy_champion
from uniroute.gateway import live
from uniroute.gateway.calls import Attempt, error_line, secrets_of
from uniroute.gateway.deployments import (
    DeploymentsError,
    coverage_line,
    deployments_of,
    published_coverage,
    read_deployments,
    redacted,
)
from uniroute.gateway.live import FIXED_SETTING, LiveRouter, Loaded, requested_setting
from uniroute.gateway.traces import SOURCE, Happened, conversation_hash, gateway_record
from uniroute.ingest.prices import UNDATED, Price
from uniroute.pipeline.serving.records import Served, decision_records
from uniroute.pipeline.serving.route import RoutedBatch, RoutingError, route_batch


def test_the_model_field_names_a_setting_or_a_pool_model() -> None:
    assert requested_setting("uniroute").budget is None and requested_setting("uniroute").lam is None
    assert requested_setting("uniroute/budget-0.3").budget == 0.3
    assert requested_setting("uniroute/max-cost-0.002").max_cost == 0.002
    assert requested_setting("uniroute/lambda-0.5").lam == 0.5
    assert requested_setting("gpt-x") is None
    for bad in ("uniroute/budget", "uniroute/cheap", "uniroute/budget-1.5", "uniroute/lambda--1"):
        with pytest.raises(RoutingError):
            requested_setting(bad)


def test_a_deployments_file_in_litellm_format_is_read_and_keys_stay_references(tmp_path: Path) -> None:
    path = tmp_path / "deployments.yaml"
    path.write_text("model_list:\n  - model_name: cheap\n    litellm_params:\n      model: openai/cheap\n"
                    "      api_base: http://127.0.0.1:1/v1\n      api_key: os.environ/CHEAP_KEY\n")
    assert read_deployments(path).names == ("cheap",)
    with pytest.raises(DeploymentsError, match="os.environ/VAR") as inline:
        deployments_of({"model_list": [{"model_name": "m", "litellm_params": {"model": "openai/m",
                                                                              "api_key": "sk-secret-1234"}}]})
    assert "sk-secret-1234" not in str(inline.value)
    assert redacted({"model_name": "m", "litellm_params": {"api_key": "sk-secret-1234"}})["litellm_params"] == \
        {"api_key": "***"}
    for bad in ({}, {"model_list": []}, {"model_list": [{"model_name": "m"}]}):
        with pytest.raises(DeploymentsError):
            deployments_of(bad)
    with pytest.raises(DeploymentsError, match="no deployments file"):
        read_deployments(tmp_path / "missing.yaml")


def test_the_start_line_names_uncovered_models_and_stray_deployments() -> None:
    line = coverage_line(["cheap", "big"], ["cheap", "old"])
    assert "without a deployment: big" in line and "naming no pool model: old" in line
    assert "every pool model" in coverage_line(["cheap"], ["cheap"])


def test_error_texts_never_carry_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GW_PART_KEY", "sk-abcdef123456")
    secrets = secrets_of([{"litellm_params": {"api_key": "os.environ/GW_PART_KEY"}}])
    assert error_line(RuntimeError("bad key sk-abcdef123456 given"), secrets) == "RuntimeError: bad key *** given"


def test_a_price_costs_tokens_or_a_call() -> None:
    assert Price("m", UNDATED, 100.0, 200.0).cost(10, 4) == pytest.approx((10 * 100 + 4 * 200) / 1e6)
    assert Price("m", UNDATED, per_call=0.5).cost(None, None) == 0.5
    assert Price("m", UNDATED, 100.0, 200.0).cost(None, 4) is None


def test_a_named_cap_leaves_pricier_fallbacks_out(tmp_path: Path) -> None:
    db = save_toy_champion(tmp_path / "uniroute.duckdb")
    set_prices(db)
    publish_current(db, tmp_path / "published")
    loaded = LiveRouter(tmp_path / "published", db, lambda source: ToyEmbedder()).loaded
    assert loaded.cap(requested_setting("uniroute/max-cost-2")) == 2.0
    assert loaded.cap(requested_setting("uniroute/budget-0.5")) == pytest.approx(5.0)  # half of big's 10
    assert loaded.cap(requested_setting("uniroute")) is None and loaded.cap(requested_setting("uniroute/lambda-1")) \
        is None
    assert set(loaded.prices) == {"cheap", "big"}
    decided = loaded.decide("a hard question", requested_setting("uniroute/lambda-0"))
    assert decided.columns["model"][0] == "big" and list(decided.columns["fallbacks"][0]) == ["cheap"]


def test_doctor_names_the_published_pool_models_without_a_deployment(tmp_path: Path) -> None:
    db = save_toy_champion(tmp_path / "uniroute.duckdb")
    path = tmp_path / "deployments.yaml"
    path.write_text("model_list:\n  - model_name: cheap\n    litellm_params: {model: openai/cheap}\n")
    assert published_coverage(path, tmp_path / "published") is None  # nothing published yet
    publish_current(db, tmp_path / "published")
    assert published_coverage(path, tmp_path / "published") == \
        "deployment coverage: pool models without a deployment: big"
    path.write_text("model_list: []\n")
    assert "non-empty `model_list`" in published_coverage(path, tmp_path / "published")


def test_a_setting_is_resolved_once_per_router_and_each_decision_still_names_it(tmp_path: Path) -> None:
    db = save_toy_champion(tmp_path / "uniroute.duckdb")
    publish_current(db, tmp_path / "published")
    loaded = LiveRouter(tmp_path / "published", db, lambda source: ToyEmbedder()).loaded
    columns = ["model", "lam", "budget", "setting", "max_cost"]
    for name in ("uniroute", "uniroute/max-cost-2", "uniroute/budget-0.5", "uniroute/lambda-0"):
        first = loaded.decide("a hard question", requested_setting(name)).frame()[columns]
        again = loaded.decide("a hard question", requested_setting(name)).frame()[columns]
        assert again.to_dict("records") == first.to_dict("records")
    assert len(loaded.resolved) == 4


class BusyEmbedder(ToyEmbedder):
    """The toy embedder, taking the CPU time of a heavy model (a transformer) per call."""

    def encode(self, texts: list[str]) -> np.ndarray:
        stop = time.thread_time() + 0.02
        while time.thread_time() < stop:
            pass
        return super().encode(texts)


def test_light_decisions_run_on_the_event_loop_and_heavy_ones_on_a_thread(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # The toy router's decision takes 1-2 ms of CPU, at the product's 2 ms line under a loaded suite; the line is
    # moved to 10 ms so the test tells a light router (inline) from a heavy one (>= 20 ms, a thread) on any load.
    monkeypatch.setattr(live, "INLINE_DECISION_SECONDS", 0.01)
    db = save_toy_champion(tmp_path / "uniroute.duckdb")
    publish_current(db, tmp_path / "published")
    setting = requested_setting("uniroute/lambda-0")
    light = LiveRouter(tmp_path / "published", db, lambda source: ToyEmbedder()).loaded
    assert not light.decides_inline(setting)  # nothing measured yet, and the setting's first request calibrates
    for _ in range(3):
        light.timed_decide("a hard question", setting)
    assert light.decides_inline(setting)
    assert not light.decides_inline(requested_setting("uniroute/max-cost-2"))  # not resolved yet
    heavy = LiveRouter(tmp_path / "published", db, lambda source: BusyEmbedder()).loaded
    for _ in range(3):
        heavy.timed_decide("a hard question", setting)
    assert heavy.decision_seconds[0] >= 0.02 and not heavy.decides_inline(setting)


def _frame_record(loaded: Loaded, batch: RoutedBatch, text: str) -> dict:
    """The decision record of route_batch's frame, as the gateway wrote it before it recorded from columns."""
    source = loaded.source
    served = Served(SOURCE, source.router_id, batch.embedder_id, source.publication_version)
    return decision_records(batch.decisions, batch.X, source.router, served, texts=[text],
                            propensity=batch.propensity, explore=batch.explored)[0]


def test_a_gateway_record_carries_what_route_batchs_frame_records(tmp_path: Path) -> None:
    # The gateway decides and records from columns (no pandas frame per request); its records must stay the ones
    # the frame path wrote: same fields in the same order, same values and types, ids and times aside.
    db = save_toy_champion(tmp_path / "uniroute.duckdb")
    set_prices(db)
    publish_current(db, tmp_path / "published")
    loaded = LiveRouter(tmp_path / "published", db, lambda source: ToyEmbedder()).loaded
    happened = Happened("big", [Attempt("cheap", "Timeout: slow", 5.0), Attempt("big", None, 1.25)], 6.5, 7.0, 3,
                        4, 0.0123, None, conversation_hash("c-1"))
    fresh = ("decision_id", "decided_at")

    def same(fast: dict, frame: dict) -> None:
        assert list(fast)[:len(frame)] == list(frame)
        assert [(k, v, type(v)) for k, v in fast.items() if k in frame and k not in fresh] \
            == [(k, v, type(v)) for k, v in frame.items() if k not in fresh]

    text = "a hard question"
    for name in ("uniroute", "uniroute/lambda-0", "uniroute/budget-0.5", "uniroute/max-cost-2",
                 "uniroute/lambda-0/max-latency-5"):
        request = requested_setting(name)
        assert request is not None
        for _ in range(2):  # a setting's first decision resolves its lambda, the next routes at it
            fast = gateway_record(loaded, loaded.decide(text, request), text, happened)
            batch = route_batch(loaded.source, [text], lam=request.lam, budget=request.budget,
                                max_cost=request.max_cost, max_latency=request.max_latency, embedder=loaded.embedder,
                                calibration=loaded.calibration)
            same(fast, _frame_record(loaded, batch, text))
            assert fast["answered_by"] == "big" and fast["attempts"][0]["error"] == "Timeout: slow"
    # A caller-named model: the frame the gateway used to change column by column.
    fast = gateway_record(loaded, loaded.fixed(text, "cheap"), text, happened)
    batch = route_batch(loaded.source, [text], embedder=loaded.embedder, calibration=loaded.calibration)
    decisions = batch.decisions
    decisions["model"], decisions["setting"], decisions["budget"] = "cheap", FIXED_SETTING, None
    decisions["fallbacks"] = pd.Series([None], dtype=object, index=decisions.index)
    decisions["expected_score"], decisions["expected_cost"] = None, loaded.model_cost("cheap")
    same(fast, _frame_record(loaded, batch, text))
    assert (fast["model"], fast["setting"], fast["fallbacks"], fast["budget"], fast["expected_cost"]) \
        == ("cheap", FIXED_SETTING, None, None, 1.0)
