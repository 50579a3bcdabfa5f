"""The OpenAI-compatible HTTP endpoint: `POST /v1/chat/completions` (whole or streamed as server-sent events),
`GET /v1/models` and `POST /v1/uniroute/outcomes`.

`model: "uniroute"` (or `uniroute/budget-B`, `uniroute/max-cost-C`, `uniroute/lambda-L`, `uniroute/max-latency-S`,
the first three optionally followed by `/max-latency-S`) routes the last user message with the served router; the
decision's model is called, then its ranked fall-backs within the cap a named budget or max cost sets (and never a
model whose recorded latency is above a max latency); a conversation (header `x-uniroute-conversation`, else the
`user` field) stays on the model that answered its first turn while it answers. The response's `model` is the model
that answered and the header `x-uniroute-decision-id` names the decision record written for the request. A pool
model asked for by name is called directly, without fall-backs, and recorded too (its setting says the caller fixed
the model).
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import anyio
import orjson
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from uniroute.gateway.calls import Answer, first_answer, secrets_of, usage_of
from uniroute.gateway.deployments import Deployments, coverage_line
from uniroute.gateway.live import ROUTED, Conversations, LiveRouter, Loaded, requested_setting
from uniroute.gateway.traces import Happened, conversation_hash, gateway_record, write_outcome
from uniroute.pipeline.serving.decided import DecidedColumns
from uniroute.pipeline.serving.route import RoutingError, RoutingRequest
from uniroute.pipeline.serving.spool import DecisionSpool

log = logging.getLogger(__name__)

DECISION_HEADER = "x-uniroute-decision-id"
CONVERSATION_HEADER = "x-uniroute-conversation"
SETTINGS_SHOWN = ("uniroute/budget-0.3", "uniroute/max-cost-0.002", "uniroute/lambda-0.5", "uniroute/max-latency-2")
# Request fields passed on to the model as given (the rest of the OpenAI chat API is LiteLLM's to map or drop).
PASSED = ("temperature", "top_p", "max_tokens", "max_completion_tokens", "stop", "n", "presence_penalty",
          "frequency_penalty", "seed", "tools", "tool_choice", "response_format", "logit_bias", "logprobs",
          "top_logprobs", "parallel_tool_calls")
REMEMBERED = 100_000  # decisions whose cost and tokens an outcome posted later can carry


@dataclass
class Gateway:
    """What the endpoint serves with: the live router, LiteLLM's Router over the deployments, where records go."""

    live: LiveRouter
    deployments: Deployments
    llm: Any  # litellm.Router
    spool: DecisionSpool | None  # None: decisions not recorded
    inbox_dir: Path | None  # where posted outcomes go (None: refused)
    keep_prompt: bool = False
    conversations: Conversations = field(default_factory=Conversations)

    def __post_init__(self) -> None:
        self.secrets = secrets_of(self.deployments.model_list)
        self.deployed = set(self.deployments.names)
        self._spent: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self.live.on_switch = self._switched

    def _switched(self, loaded: Loaded) -> None:
        """A new router serves: its pool may have gained a model without a deployment (or lost one), said once."""
        log.warning(self.switch_line(loaded))

    def switch_line(self, loaded: Loaded) -> str:
        """What a switch to a new router version is told as: the router now serving, its pool's coverage."""
        coverage = coverage_line(loaded.source.pool, self.deployments.names)
        return f"gateway: now serving router {loaded.source.router_id}; {coverage}"

    def coverage(self) -> str:
        """One line: pool models without a deployment, deployments naming no pool model."""
        return coverage_line(self.live.loaded.source.pool, self.deployments.names)

    def candidates(self, loaded: Loaded, request: RoutingRequest, chosen: str, fallbacks: list[str],
                   pinned: str | None) -> tuple[list[str], list[str], float | None]:
        """(models to try in order, models left out for being above the cap, the cap): the conversation's model
        first when it has one, then the decision's model and its fall-backs; a fall-back above a named budget's or
        max cost's cap never (the decision's own model always is tried), nor a model (a conversation's too) whose
        recorded latency is above a max latency."""
        cap = loaded.cap(request)
        order = list(dict.fromkeys([*([pinned] if pinned in loaded.source.pool else []), chosen, *fallbacks]))
        tried, above = [], []
        for model in order:
            cost = loaded.model_cost(model)
            if loaded.too_slow(request, model) or (cap is not None and model != chosen
                                                   and (cost is None or cost > cap)):
                above.append(model)
            else:
                tried.append(model)
        return tried, above, cap

    def spend_of(self, decision_id: str) -> dict[str, Any]:
        """The real cost and tokens of a decision served lately (empty when forgotten or unknown)."""
        return {k: v for k, v in self._spent.get(decision_id, {}).items() if v is not None}

    def remember_spend(self, decision_id: str, spend: dict[str, Any]) -> None:
        self._spent[decision_id] = spend
        while len(self._spent) > REMEMBERED:
            self._spent.popitem(last=False)

    def record(self, loaded: Loaded, decided: DecidedColumns, text: str, happened: Happened) -> None:
        """Write the request's decision record to the spool (a full disk loses the record, never the answer)."""
        if self.spool is None:
            return
        try:
            self.spool.write([gateway_record(loaded, decided, text if self.keep_prompt else None, happened)])
        except OSError as exc:
            log.warning("gateway: decision not recorded (%s)", exc.strerror or exc)


def _error(status: int, message: str, kind: str, decision_id: str | None = None) -> JSONResponse:
    headers = {DECISION_HEADER: decision_id} if decision_id else None
    return JSONResponse({"error": {"message": message, "type": kind, "code": status}}, status_code=status,
                        headers=headers)


def last_user_text(messages: list[Any]) -> str | None:
    """The text of the last user message (text parts joined), what the router routes."""
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
            return content if isinstance(content, str) and content.strip() else None
    return None


def _dump(obj: Any, model: str) -> dict[str, Any]:
    data = obj.model_dump(exclude_none=True) if hasattr(obj, "model_dump") else dict(obj)
    data["model"] = model
    return data


def gateway_app(gateway: Gateway) -> FastAPI:
    """The FastAPI application of a gateway."""
    app = FastAPI(title="uniroute gateway", docs_url=None, redoc_url=None)

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        pool = gateway.live.loaded.source.pool  # a retired model's deployment is not offered (it is refused)
        names = [ROUTED, *SETTINGS_SHOWN, *(n for n in gateway.deployments.names if n in pool)]
        return {"object": "list", "data": [{"id": n, "object": "model", "owned_by": "uniroute"} for n in names]}

    @app.post("/v1/uniroute/outcomes")
    async def outcomes(request: Request) -> Response:
        body = await _json(request)
        if not isinstance(body, dict) or not isinstance(body.get("decision_id"), str):
            return _error(400, "give {\"decision_id\": ..., \"score\": 0..1}", "invalid_request_error")
        score = body.get("score")
        if isinstance(score, bool) or not isinstance(score, int | float) or not 0.0 <= float(score) <= 1.0:
            return _error(400, f"score must be a number in [0, 1], not {score!r}", "invalid_request_error")
        if gateway.inbox_dir is None:
            return _error(503, "this gateway has no inbox to record outcomes in", "uniroute_error")
        spend = gateway.spend_of(body["decision_id"])
        path = await anyio.to_thread.run_sync(write_outcome, gateway.inbox_dir, body["decision_id"], score, spend)
        return JSONResponse({"recorded": True, "file": path.name})

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> Response:
        started = time.perf_counter()
        body = await _json(request)
        if not isinstance(body, dict) or not isinstance(body.get("model"), str) \
                or not isinstance(body.get("messages"), list) or not body["messages"]:
            return _error(400, "give `model` and a non-empty `messages` list", "invalid_request_error")
        params = {k: body[k] for k in PASSED if k in body}
        stream = bool(body.get("stream"))
        try:
            setting = requested_setting(body["model"])
        except RoutingError as exc:
            return _error(400, str(exc), "invalid_request_error")
        loaded = gateway.live.loaded  # one router for the whole request, whatever switches meanwhile
        if setting is None and (body["model"] not in gateway.deployed or body["model"] not in loaded.source.pool):
            return _error(404, f"model {body['model']!r} is neither `uniroute` nor a deployed model of the active pool "
                          "(GET /v1/models)", "invalid_request_error")
        text = last_user_text(body["messages"])
        if text is None:
            return _error(400, "no user message with text to route", "invalid_request_error")
        try:
            decided = await _decision(loaded, text, setting, body["model"])
        except RoutingError as exc:
            return _error(400, str(exc), "invalid_request_error")
        row = {name: decided.columns[name][0] for name in ("decision_id", "model", "fallbacks", "setting")}
        decision_id = str(row["decision_id"])
        key = request.headers.get(CONVERSATION_HEADER) or (body.get("user") if isinstance(body.get("user"), str)
                                                            else None)
        fallbacks = [] if row["fallbacks"] is None else [str(m) for m in row["fallbacks"]]
        if setting is not None:
            tried, above, cap = gateway.candidates(loaded, setting, str(row["model"]), fallbacks,
                                                   gateway.conversations.model_of(key))
        else:  # the caller's model only: no fall-back, and the conversation is not pinned to it
            tried, above, cap = [body["model"]], [], None
        answer = await first_answer(gateway.llm, tried, body["messages"], params, stream, gateway.secrets,
                                    gateway.deployed)
        if answer.model is None:
            failure = _failure_line(answer, above, cap, str(row["setting"]),
                                    None if setting is None else setting.max_latency)
            gateway.record(loaded, decided, text, Happened(None, answer.attempts, None, _ms(started), failure=failure,
                                                           conversation=conversation_hash(key)))
            return _error(503 if above else 502, failure, "uniroute_no_answer", decision_id)
        if setting is not None:
            gateway.conversations.remember(key, answer.model)
        headers = {DECISION_HEADER: decision_id}
        if not stream:
            happened = _happened(loaded, answer, answer.response, started, key)
            gateway.record(loaded, decided, text, happened)
            gateway.remember_spend(decision_id, _spend(happened))
            return Response(orjson.dumps(_dump(answer.response, answer.model)), media_type="application/json",
                            headers=headers)
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        return StreamingResponse(_events(gateway, loaded, decided, text, answer, started, key, include_usage),
                                 media_type="text/event-stream", headers=headers)

    return app


async def _decision(loaded: Loaded, text: str, setting: RoutingRequest | None, model: str) -> DecidedColumns:
    """The request's decision (a named model's: at the default setting, for its record): on the event loop when
    this router's decisions are light (Loaded.decides_inline), else on a worker thread so the loop serves
    meanwhile."""
    inline = loaded.decides_inline(setting or RoutingRequest())
    if setting is None:
        return loaded.fixed(text, model) if inline else await anyio.to_thread.run_sync(loaded.fixed, text, model)
    if inline:
        return loaded.timed_decide(text, setting)
    return await anyio.to_thread.run_sync(loaded.timed_decide, text, setting)


async def _events(gateway: Gateway, loaded: Loaded, decided: DecidedColumns, text: str, answer: Answer, started: float,
                  key: str | None, include_usage: bool):  # noqa: ANN202 - an async generator of SSE bytes
    """The stream as server-sent events; its record written when it ends (the usage chunk gives the tokens)."""
    last_usage: Any = None
    recorded = False

    def record(error: str | None = None) -> None:
        nonlocal recorded
        if not recorded:
            recorded = True
            happened = _happened(loaded, answer, last_usage, started, key, error)
            gateway.record(loaded, decided, text, happened)
            gateway.remember_spend(str(decided.columns["decision_id"][0]), _spend(happened))

    # a streamed answer always carries its model and the rest of its stream (calls.py)
    model, stream = str(answer.model), cast(AsyncIterator[Any], answer.stream)
    chunk = answer.first_chunk
    try:
        while True:
            if getattr(chunk, "usage", None) is not None:
                last_usage = chunk
            if getattr(chunk, "choices", None) or include_usage:
                yield b"data: " + orjson.dumps(_dump(chunk, model)) + b"\n\n"
            try:
                chunk = await stream.__anext__()
            except StopAsyncIteration:
                break
        record()  # before the end marker: a client that has read it finds the record written
        yield b"data: [DONE]\n\n"
    except Exception as exc:  # noqa: BLE001 - a stream broken after its first chunk: recorded, not retried
        record(f"{type(exc).__name__} after the first chunk")
    finally:
        record("the client went away before the end of the stream")


def _happened(loaded: Loaded, answer: Answer, usage_from: Any, started: float, key: str | None,
              failure: str | None = None) -> Happened:
    tokens_in, tokens_out = usage_of(usage_from) if usage_from is not None else (None, None)
    price = loaded.prices.get(answer.model) if answer.model is not None else None
    cost = None if price is None else price.cost(tokens_in, tokens_out)
    return Happened(answer.model, answer.attempts, answer.ttft_ms, _ms(started), tokens_in, tokens_out, cost,
                    failure, conversation_hash(key))


def _spend(happened: Happened) -> dict[str, Any]:
    return {"cost": happened.cost, "input_tokens": happened.input_tokens, "output_tokens": happened.output_tokens}


def _failure_line(answer: Answer, above: list[str], cap: float | None, setting: str,
                  max_latency: float | None = None) -> str:
    failed = "; ".join(f"{a.model}: {a.error}" for a in answer.attempts) or "no deployed candidate"
    line = f"no model answered ({failed})"
    if above:
        caps = [f"the {setting} cap of {cap:g} per call"] if cap is not None else []
        caps += [f"the max latency of {max_latency:g} s"] if max_latency is not None else []
        line += (f"; not tried, above {' or '.join(caps)}: {', '.join(above)} "
                 "(ask for a higher cap to allow them)")
    return line


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000.0


async def _json(request: Request) -> Any:
    try:
        return orjson.loads(await request.body())
    except orjson.JSONDecodeError:
        return None
