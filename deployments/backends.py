"""Local OpenAI-compatible test backends on 127.0.0.1: a tiny FastAPI app per model in a uvicorn thread, answering
like a real endpoint (usage included, streaming as server-sent events) with a configurable latency and failure,
and killable (its socket closes: later calls are refused). `make run` sends its traffic through the gateway to
these (nothing leaves the machine); the gateway's tests and benchmarks use them too."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import uvicorn
import yaml
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse

from deployments.serve import free_port

ANSWER_TOKENS = 4  # completion tokens of every answer: "answer from <name> ."


def prompt_tokens(messages: list[dict]) -> int:
    """The backend's token count: words of every message (what its `usage` reports)."""
    return sum(len(str(m.get("content", "")).split()) for m in messages)


@dataclass
class Backend:
    """One model's endpoint: latency (seconds), failing (answer 500), calls served, tokens counted."""

    name: str
    latency: float = 0.0
    failing: bool = False
    port: int = field(default_factory=free_port)
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        config = uvicorn.Config(self._app(), host="127.0.0.1", port=self.port, log_level="warning", lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> Backend:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        return self

    def kill(self) -> None:
        """Stop answering: the listening socket closes, later calls are refused."""
        self._server.should_exit = True
        self._thread.join(timeout=10)

    def _count(self, messages: list[dict]) -> int:
        tokens = prompt_tokens(messages)
        with self._lock:
            self.calls += 1
            self.input_tokens += tokens
            self.output_tokens += ANSWER_TOKENS
        return tokens

    def _app(self) -> FastAPI:
        app = FastAPI()

        @app.post("/v1/chat/completions")
        async def chat(request: Request):  # noqa: ANN202 - a FastAPI handler
            body = await request.json()
            if self.latency:
                await asyncio.sleep(self.latency)
            if self.failing:
                return JSONResponse({"error": {"message": f"{self.name} is failing", "type": "server_error"}},
                                    status_code=500)
            tokens = self._count(body["messages"])
            usage = {"prompt_tokens": tokens, "completion_tokens": ANSWER_TOKENS,
                     "total_tokens": tokens + ANSWER_TOKENS}
            rid, words = f"chatcmpl-{uuid.uuid4().hex}", ["answer ", "from ", f"{self.name} ", "."]
            base = {"id": rid, "created": int(time.time()), "model": self.name}
            if not body.get("stream"):
                return {**base, "object": "chat.completion", "usage": usage, "choices": [{
                    "index": 0, "finish_reason": "stop",
                    "message": {"role": "assistant", "content": "".join(words)}}]}

            async def events():  # noqa: ANN202
                for i, word in enumerate(words):
                    delta = {"content": word, **({"role": "assistant"} if i == 0 else {})}
                    chunk = {**base, "object": "chat.completion.chunk",
                             "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
                    yield f"data: {json.dumps(chunk)}\n\n"
                end = {**base, "object": "chat.completion.chunk",
                       "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
                yield f"data: {json.dumps(end)}\n\n"
                if (body.get("stream_options") or {}).get("include_usage"):
                    last = {**base, "object": "chat.completion.chunk", "choices": [], "usage": usage}
                    yield f"data: {json.dumps(last)}\n\n"
                yield "data: [DONE]\n\n"

            return StreamingResponse(events(), media_type="text/event-stream")

        @app.get("/v1/models")
        async def models() -> dict:
            return {"object": "list", "data": [{"id": self.name, "object": "model"}]}

        return app


def write_deployments(path: Path, backends: Mapping[str, Backend], key_var: str, timeout: float = 5.0) -> Path:
    """A deployments file (LiteLLM's model_list) calling each model at its backend, its key read from key_var;
    written whole (a temporary name, then a rename), so a gateway never reads half of it."""
    model_list = [{"model_name": name, "litellm_params": {
        "model": f"openai/{name}", "api_base": backend.api_base, "api_key": f"os.environ/{key_var}",
        "timeout": timeout}} for name, backend in backends.items()]
    partial = path.with_name(path.name + ".part")
    partial.write_text(yaml.safe_dump({"model_list": model_list}, sort_keys=False))
    partial.replace(path)
    return path
