"""The servers the gateway benchmarks measure, each in its own process (so none steals the others' interpreter):
the local OpenAI-compatible test backends of tests/gateway/backends.py (one process per model, killable for real),
the gateway over the toy published router of tests/gateway/harness.py, and, as the yardstick, LiteLLM alone: the
same LiteLLM Router (uniroute.gateway.deployments) behind the same FastAPI/uvicorn stack, every request sent to one
fixed model, nothing routed or recorded. What the gateway takes beyond the yardstick is uniroute's own cost.

A server process is this module run as `python -m benchmarks.speed.gateway_servers backend|gateway|litellm ...`.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from fastapi import Request  # resolved by FastAPI from this module's names (annotations are strings)

from benchmarks.runner import REPO, SINGLE_THREAD

KEY_VAR = "UNIROUTE_TEST_GATEWAY_KEY"  # the test backends ignore the key; LiteLLM needs one to send
READY_SECONDS = 300.0  # a loaded shared machine can take minutes to import LiteLLM


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def toy_home(home: Path, backends: dict[str, int], timeout: float = 5.0) -> Path:
    """A home with the toy store (cheap, big; mid retired) priced and published, and a deployments file calling
    the backends on their ports; the deployments file back."""
    from tests.gateway.harness import publish_current, set_prices
    from tests.pipeline.toy_store import save_toy_champion

    home.mkdir(parents=True, exist_ok=True)
    db_path = save_toy_champion(home / "uniroute.duckdb")
    set_prices(db_path)
    publish_current(db_path, home / "published")
    lines = ["model_list:"]
    for name, port in backends.items():
        lines += [f"  - model_name: {name}", "    litellm_params:", f"      model: openai/{name}",
                  f"      api_base: http://127.0.0.1:{port}/v1", f"      api_key: os.environ/{KEY_VAR}",
                  f"      timeout: {timeout}"]
    path = home / "deployments.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


@dataclass
class Server:
    """One server process on a port of 127.0.0.1."""

    kind: str
    port: int
    process: subprocess.Popen
    log: Path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def stop(self, sig: int = signal.SIGINT) -> None:
        """Stop it (SIGINT: uvicorn finishes cleanly, the gateway closes its spool file; SIGKILL: killed)."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@dataclass
class Servers:
    """Every server started, stopped together."""

    started: list[Server] = field(default_factory=list)

    def launch(self, kind: str, *args: str, log_dir: Path) -> Server:
        port = free_port()
        log = log_dir / f"{kind}-{port}.log"
        env = {**os.environ, **SINGLE_THREAD, KEY_VAR: "sk-bench-not-a-key",
               "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
        with open(log, "wb") as out:
            process = subprocess.Popen([sys.executable, "-m", "benchmarks.speed.gateway_servers", kind,
                                        "--port", str(port), *args], cwd=REPO, env=env, stdout=out,
                                       stderr=subprocess.STDOUT)
        server = Server(kind, port, process, log)
        self.started.append(server)
        deadline = time.monotonic() + READY_SECONDS
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"{kind} server ended at start: {log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{server.base_url}/models", timeout=1).status_code == 200:
                    return server
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"{kind} server not ready in {READY_SECONDS:.0f} s: {log.read_text()[-2000:]}")

    def stop(self) -> None:
        for server in reversed(self.started):
            server.stop()


def serve_backend(name: str, port: int, latency: float) -> None:
    from tests.gateway.backends import Backend

    backend = Backend(name, latency=latency, port=port).start()
    signal.sigwait({signal.SIGINT, signal.SIGTERM})
    backend.kill()


def serve_gateway(home: Path, port: int) -> None:
    from tests.gateway.harness import ToyEmbedder
    from uniroute.gateway.launch import GatewayPlaces, open_gateway, serve

    places = GatewayPlaces(home / "published", home / "uniroute.duckdb", home / "spool" / "decisions",
                           home / "inbox", home / "deployments.yaml")
    serve(open_gateway(places, embedder_of=lambda source: ToyEmbedder(), spool_seconds=3600.0), "127.0.0.1",
          port, say=lambda line: None)


def serve_litellm(home: Path, port: int, model: str) -> None:
    """LiteLLM alone: the gateway's LiteLLM Router and HTTP stack, the model fixed, nothing routed or recorded."""
    import orjson
    import uvicorn
    from fastapi import FastAPI
    from fastapi.responses import Response

    from uniroute.gateway.deployments import litellm_router, read_deployments

    router = litellm_router(read_deployments(home / "deployments.yaml"))
    app = FastAPI(docs_url=None, redoc_url=None)

    @app.get("/v1/models")
    async def models() -> dict:
        return {"object": "list", "data": [{"id": model, "object": "model"}]}

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> Response:
        body = orjson.loads(await request.body())
        response = await router.acompletion(model=model, messages=body["messages"])
        return Response(orjson.dumps(response.model_dump(exclude_none=True)), media_type="application/json")

    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kind", choices=("backend", "gateway", "litellm"))
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--name", default="cheap", help="backend: the model it answers as")
    parser.add_argument("--latency", type=float, default=0.0, help="backend: seconds before each answer")
    parser.add_argument("--home", type=Path, help="gateway, litellm: the toy home (toy_home)")
    parser.add_argument("--model", default="cheap", help="litellm: the one model every request goes to")
    args = parser.parse_args()
    if args.kind == "backend":
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        serve_backend(args.name, args.port, args.latency)
    elif args.kind == "gateway":
        serve_gateway(args.home, args.port)
    else:
        serve_litellm(args.home, args.port, args.model)


if __name__ == "__main__":
    main()
