"""The gateway end to end: local OpenAI-compatible backends, a published toy router, the OpenAI client."""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from tests import needs

needs.installed("litellm")
openai = needs.module("openai")

from deployments.backends import ANSWER_TOKENS, prompt_tokens  # noqa: E402
from tests.gateway.harness import KEY, KEY_VAR, PRICES, Running, publish_current, start  # noqa: E402
from uniroute import operations, store  # noqa: E402
from uniroute.gateway.live import FIXED_SETTING  # noqa: E402
from uniroute.pipeline.pool import registry  # noqa: E402
from uniroute.routers.cluster.kmeans import Centroids, clustering_id_of  # noqa: E402
from uniroute.routers.router import Router  # noqa: E402


@pytest.fixture
def running(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(KEY_VAR, KEY)
    gateway = start(tmp_path / "home")
    yield gateway
    gateway.stop()


def client(running: Running) -> openai.OpenAI:
    return openai.OpenAI(base_url=running.base_url, api_key="unused", max_retries=0, timeout=30)


def ask(running: Running, text: str, model: str = "uniroute/lambda-0", **extra):
    raw = client(running).chat.completions.with_raw_response.create(
        model=model, messages=[{"role": "user", "content": text}], **extra)
    return raw.parse(), raw.headers.get("x-uniroute-decision-id")


def spooled(running: Running) -> list[dict]:
    running.gateway.spool.close()
    return [json.loads(line) for f in sorted((running.home / "spool" / "decisions").glob("*.jsonl"))
            for line in f.read_text().splitlines()]


def test_routes_each_prompt_and_answers_as_the_model_that_answered(running: Running) -> None:
    easy, easy_id = ask(running, "an easy question")
    hard, hard_id = ask(running, "a hard question")
    assert (easy.model, hard.model) == ("cheap", "big")
    assert "from cheap" in easy.choices[0].message.content and easy.usage.completion_tokens == ANSWER_TOKENS
    assert easy_id and hard_id and easy_id != hard_id
    default, _ = ask(running, "a hard question", model="uniroute")
    assert default.model in ("cheap", "big")
    models = [m.id for m in client(running).models.list().data]
    assert {"uniroute", "cheap", "big"} <= set(models) and "mid" not in models  # mid: deployed but retired
    direct, direct_id = ask(running, "an easy question", model="big")  # a pool model by name: straight to it
    assert direct.model == "big" and direct_id not in (None, easy_id, hard_id)
    with pytest.raises(openai.NotFoundError):  # retired: deployed, but out of the pool
        ask(running, "an easy question", model="mid")


def test_a_request_naming_a_pool_model_is_recorded_as_fixed_by_the_caller(running: Running) -> None:
    running.backends["cheap"].failing = True
    with pytest.raises(openai.APIStatusError) as failed:  # the caller's model only: never a fall-back
        ask(running, "a hard question", model="cheap")
    running.backends["cheap"].failing = False
    answer, decision_id = ask(running, "a hard question", model="cheap", extra_headers={
        "x-uniroute-conversation": "c-fixed"})
    chunks = list(client(running).chat.completions.create(
        model="cheap", messages=[{"role": "user", "content": "a hard one, streamed"}], stream=True))
    assert answer.model == "cheap" and {c.model for c in chunks} == {"cheap"}
    records = spooled(running)
    assert failed.value.response.headers["x-uniroute-decision-id"] == records[0]["decision_id"]
    assert records[0]["answered_by"] is None and [a["model"] for a in records[0]["attempts"]] == ["cheap"]
    assert records[1]["decision_id"] == decision_id
    for record in records[1:]:  # the router would have sent "hard" to big: the record names the caller's model
        assert (record["model"], record["answered_by"], record["setting"]) == ("cheap", "cheap", FIXED_SETTING)
        assert record["fallbacks"] is None and record["cluster"] == 1 and record["output_tokens"] == ANSWER_TOKENS
    # the caller's choice pins no conversation: its next routed turn is routed on its own
    assert ask(running, "a hard question", extra_headers={"x-uniroute-conversation": "c-fixed"})[0].model == "big"


def test_streams_server_sent_events_from_the_routed_model(running: Running) -> None:
    chunks = list(client(running).chat.completions.create(
        model="uniroute/lambda-0", messages=[{"role": "user", "content": "a hard question"}], stream=True))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "answer from big ."
    assert {c.model for c in chunks} == {"big"}
    record = spooled(running)[0]
    assert record["answered_by"] == "big" and record["output_tokens"] == ANSWER_TOKENS
    assert record["ttft_ms"] is not None and record["ttft_ms"] <= record["latency_ms"]


def test_a_killed_backend_falls_back_by_the_table_and_cools_down(running: Running, capfd: pytest.CaptureFixture,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    running.backends["big"].kill()
    answers = [ask(running, f"a hard question {i}")[0] for i in range(6)]
    assert {a.model for a in answers} == {"cheap"}  # big's fall-back in the toy table
    records = spooled(running)
    assert [r["attempts"][0]["model"] for r in records] == ["big"] * 6
    assert all(r["attempts"][0]["error"] and r["attempts"][-1] == {**r["attempts"][-1], "model": "cheap",
                                                                    "error": None} for r in records)
    # LiteLLM's cooldown: after a few failures big is skipped at once instead of being called again.
    assert "cooldown" in records[-1]["attempts"][0]["error"]
    assert all(KEY not in json.dumps(r) for r in records)
    out, err = capfd.readouterr()
    assert KEY not in out + err + caplog.text  # no key in LiteLLM's or the gateway's logs either


def test_a_fallback_never_goes_above_a_max_cost_cap(running: Running) -> None:
    running.backends["cheap"].failing = True  # the only model under the cap fails
    with pytest.raises(openai.APIStatusError) as refused:
        ask(running, "an easy question", model="uniroute/max-cost-2")
    assert refused.value.status_code == 503
    assert "cap of 2" in refused.value.message and "big" in refused.value.message
    for model in ("uniroute/max-cost-2", "uniroute/budget-0.2"):  # 0.2 of big's 10: the same cap of 2 per call
        for text in ("an easy question", "a hard question", "another hard one"):
            with pytest.raises(openai.APIStatusError, match="cap of 2"):
                ask(running, text, model=model)
    assert running.backends["big"].calls == 0
    records = spooled(running)
    assert len(records) == 7 and all(r["answered_by"] is None and "cap of 2" in r["failure"] for r in records)
    # Without a cap the same failure falls back to big.
    assert ask(running, "an easy question", model="uniroute/lambda-0")[0].model == "big"


def test_a_conversation_stays_on_the_model_of_its_first_turn(running: Running) -> None:
    turns = ["a hard question", "easy follow-up", "another easy one", "thanks", "bye"]
    answered = [ask(running, t, extra_headers={"x-uniroute-conversation": "c-1"})[0].model for t in turns]
    assert answered == ["big"] * 5
    assert ask(running, "easy follow-up")[0].model == "cheap"  # another conversation routes on its own
    assert ask(running, "easy", user="u-7")[0].model == "cheap" and ask(running, "hard", user="u-7")[0].model == \
        "cheap"


def test_records_load_with_what_happened_and_outcomes_post_to_the_inbox(running: Running) -> None:
    texts = ["an easy question", "a hard question", "a hard one too"]
    ids = [ask(running, t)[1] for t in texts]
    response = client(running).post("/uniroute/outcomes", body={"decision_id": ids[0], "score": 1.0},
                                    cast_to=object)
    assert response["recorded"] is True
    running.gateway.spool.close()
    operations.inbox(running.context(), onboard_landed=False)
    con = store.open_read_only(running.db_path)
    try:
        rows = con.execute("select decision_id, answered_by, input_tokens, output_tokens, cost, latency_ms, "
                           "len(attempts) from routing_decisions order by answered_by, decision_id").fetchall()
        spend = con.execute("select sum(realized_spend) from traffic_spend_by_day").fetchone()[0]
        outcome = con.execute("select decision_id, score, cost from outcomes").fetchall()
    finally:
        con.close()
    assert sorted(r[0] for r in rows) == sorted(ids)
    assert all(r[3] == ANSWER_TOKENS and r[5] > 0 and r[6] == 1 for r in rows)
    # The realised spend is what the backends counted, at the prices: their token counters, not the gateway's
    counted = sum(b.input_tokens * PRICES[name][0] + b.output_tokens * PRICES[name][1]
                  for name, b in running.backends.items() if name in PRICES) / 1e6
    assert sum(b.calls for b in running.backends.values()) == len(texts)
    expected = sum(prompt_tokens([{"content": t}]) * PRICES["big" if "hard" in t else "cheap"][0]
                   + ANSWER_TOKENS * PRICES["big" if "hard" in t else "cheap"][1] for t in texts) / 1e6
    assert spend == pytest.approx(counted) == pytest.approx(expected)
    assert outcome[0][0] == ids[0] and outcome[0][1] == 1.0 and outcome[0][2] is not None


def _publish_a_second_router(running: Running) -> None:
    """A second router version, r-002, over the same pool, stored and published as `current`."""
    router = Router("toy-embedder", ("cheap", "big", "mid"), np.array([1.0, 10.0, 5.0]),
                    np.array([[0.1, 0.9], [0.5, 0.1], [0.6, 0.6]]),
                    Centroids(np.array([[-1.0, 0.0], [1.0, 0.0]], dtype=np.float32)))
    with store.session(running.db_path, "test") as s:
        registry.save_router_version(s.con, registry.NewVersion(
            router, "r-002", clustering_id_of(router.assigner), "kmeans", "fp-2", 0.7, True, "test"))
    publish_current(running.db_path, running.home / "published", force=True)


def test_a_switch_of_published_current_is_served_within_five_seconds(running: Running,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    assert running.gateway.live.loaded.source.router_id == "r-001"
    _publish_a_second_router(running)
    deadline = time.monotonic() + 5
    while running.gateway.live.loaded.source.router_id != "r-002" and time.monotonic() < deadline:
        time.sleep(0.1)
    assert ask(running, "a hard question")[0].model == "big"
    assert spooled(running)[-1]["router_id"] == "r-002"
    assert "now serving router r-002; deployment coverage: deployments naming no pool model: mid" in caplog.text


def test_a_rollback_during_traffic_serves_the_previous_router_and_fails_no_request(running: Running) -> None:
    _publish_a_second_router(running)
    _wait_for_router(running, "r-002")
    sent: list[tuple[float, str]] = []  # (when the request was sent, its decision id)
    stop = threading.Event()

    def traffic(worker: int) -> None:
        i = 0
        while not stop.is_set():
            at = time.monotonic()
            sent.append((at, ask(running, f"{'a hard' if i % 2 else 'an easy'} question {worker}-{i}")[1]))
            i += 1

    with ThreadPoolExecutor(4) as pool:
        workers = [pool.submit(traffic, w) for w in range(4)]
        time.sleep(1.0)
        assert operations.rollback(running.context()).result.router_id == "r-001"
        switched = _wait_for_router(running, "r-001")
        time.sleep(1.0)
        stop.set()
        for worker in workers:
            worker.result()  # a failed request raises here
    by_id = {r["decision_id"]: r for r in spooled(running)}
    assert len(by_id) == len(sent) and {r["router_id"] for r in by_id.values()} == {"r-001", "r-002"}
    later = [by_id[d] for at, d in sent if at > switched]
    assert later and all(r["router_id"] == "r-001" and r["answered_by"] for r in later)


def _wait_for_router(running: Running, router_id: str, seconds: float = 5.0) -> float:
    """When the gateway served router_id (it must within seconds of `current` moving)."""
    deadline = time.monotonic() + seconds
    while running.gateway.live.loaded.source.router_id != router_id:
        assert time.monotonic() < deadline, f"still serving {running.gateway.live.loaded.source.router_id}"
        time.sleep(0.05)
    return time.monotonic()


def test_a_model_without_a_deployment_is_an_attempt_that_falls_back(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_VAR, KEY)
    running = start(tmp_path / "home", deployed=("cheap", "retired-one"))
    try:
        line = running.gateway.coverage()
        assert "without a deployment: big" in line and "naming no pool model: retired-one" in line
        assert ask(running, "a hard question")[0].model == "cheap"
        attempts = spooled(running)[0]["attempts"]
        assert attempts[0]["model"] == "big" and attempts[0]["error"].startswith("no deployment")
        assert attempts[1] == {**attempts[1], "model": "cheap", "error": None}
    finally:
        running.stop()
