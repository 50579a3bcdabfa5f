"""Calling the models of a decision in order through LiteLLM's Router: the first candidate that answers wins, each
attempt is kept (model, error, latency). A streamed call counts as answered once its first chunk arrived (until
then a failure falls back like any other; after it, the stream is the answer). Error texts are scrubbed of every
key value the deployments reference, so no key reaches a record, a log or a client."""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

ERROR_CHARS = 300  # an attempt's error, cut to one line of this many characters


@dataclass(frozen=True)
class Attempt:
    """One call of one model: its error (None: it answered) and how long it took, in milliseconds."""

    model: str
    error: str | None
    latency_ms: float

    def as_record(self) -> dict[str, Any]:
        return {"model": self.model, "error": self.error, "latency_ms": round(self.latency_ms, 3)}


@dataclass
class Answer:
    """What the candidates gave: the answering model and its response (or, streamed, its first chunk and the rest
    of the stream), every attempt, and the time to the first token."""

    attempts: list[Attempt] = field(default_factory=list)
    model: str | None = None
    response: Any = None  # a whole ModelResponse, not streamed
    first_chunk: Any = None  # streamed: the first chunk, then `stream` yields the rest
    stream: AsyncIterator[Any] | None = None
    ttft_ms: float | None = None


def secrets_of(model_list: Sequence[dict[str, Any]]) -> tuple[str, ...]:
    """The key values the deployments reference (os.environ/VAR), to scrub from error texts."""
    values = []
    for entry in model_list:
        for value in entry.get("litellm_params", {}).values():
            if isinstance(value, str) and value.startswith("os.environ/"):
                secret = os.environ.get(value.removeprefix("os.environ/"), "")
                if len(secret) >= 4:  # a short value would blank ordinary words
                    values.append(secret)
    return tuple(sorted(set(values), key=len, reverse=True))


def error_line(exc: BaseException, secrets: Sequence[str] = ()) -> str:
    """An exception as one short line, key values replaced by ***."""
    text = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
    for secret in secrets:
        text = text.replace(secret, "***")
    return text[:ERROR_CHARS]


NO_DEPLOYMENT = "no deployment: the deployments file does not say how to call this model"


async def first_answer(router: Any, candidates: Sequence[str], messages: list[dict[str, Any]],
                       params: dict[str, Any], stream: bool, secrets: Sequence[str] = (),
                       deployed: Collection[str] | None = None) -> Answer:
    """Call candidates in order until one answers (streamed: sends its first chunk); the Answer says who, or, with
    no model set, that every candidate failed (its attempts say how). A candidate outside `deployed` (when given)
    is an attempt that failed at once, never a call."""
    answer = Answer()
    started = time.perf_counter()
    for model in candidates:
        if deployed is not None and model not in deployed:
            answer.attempts.append(Attempt(model, NO_DEPLOYMENT, 0.0))
            continue
        t0 = time.perf_counter()
        try:
            if stream:
                chunks = await router.acompletion(model=model, messages=messages, stream=True,
                                                  stream_options={"include_usage": True}, **params)
                iterator = chunks.__aiter__()
                answer.first_chunk = await iterator.__anext__()
                answer.stream = iterator
            else:
                answer.response = await router.acompletion(model=model, messages=messages, **params)
        except StopAsyncIteration:
            answer.attempts.append(Attempt(model, "EmptyStream: the stream ended before its first chunk",
                                           (time.perf_counter() - t0) * 1000))
            continue
        except Exception as exc:  # noqa: BLE001 - any provider failure falls back to the next candidate
            answer.attempts.append(Attempt(model, error_line(exc, secrets), (time.perf_counter() - t0) * 1000))
            continue
        answer.attempts.append(Attempt(model, None, (time.perf_counter() - t0) * 1000))
        answer.model = model
        answer.ttft_ms = (time.perf_counter() - started) * 1000
        return answer
    return answer


def usage_of(response_or_chunk: Any) -> tuple[int | None, int | None]:
    """(input tokens, output tokens) of a response's or chunk's `usage`, as the backend reported them."""
    usage = getattr(response_or_chunk, "usage", None)
    if usage is None:
        return None, None
    get = usage.get if isinstance(usage, dict) else (lambda name: getattr(usage, name, None))
    prompt, completion = get("prompt_tokens"), get("completion_tokens")
    return (None if prompt is None else int(prompt)), (None if completion is None else int(completion))
