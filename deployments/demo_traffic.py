"""`make run`'s traffic through the gateway, as a user sends it: a local OpenAI-compatible test backend per LLM on
127.0.0.1 (deployments/backends.py; nothing leaves the machine), `$UNIROUTE_HOME/deployments.yaml` pointing each LLM
at its backend, `uniroute gateway` in its own process, and the batch sent with the OpenAI Python client at
`model="uniroute"`. The gateway starts early (it loads its embedder while the demo onboards) and serves each new
publication within a second of `published/current` moving; stopping it (SIGTERM) finishes its spool file.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from deployments.backends import Backend, write_deployments
from deployments.serve import free_port, wait_for
from uniroute.settings import Settings

KEY_VAR = "UNIROUTE_DEMO_BACKEND_KEY"  # the test backends take any key; LiteLLM's OpenAI client wants one
BACKEND_LATENCY = 0.02  # seconds each test backend takes to answer
CONCURRENCY = 8  # requests in flight at once
START_SECONDS = 180.0  # the gateway's start (LiteLLM's import, the router's embedder) on a loaded machine


@dataclass
class DemoGateway:
    """The test backends and the gateway process serving them."""

    backends: dict[str, Backend]
    process: subprocess.Popen
    port: int
    log: Path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def wait_until_serving(self, router_id: str, timeout: float = START_SECONDS) -> None:
        """Wait until the gateway answers and serves router_id (its start line or its switch line names it)."""
        wait_for(f"{self.base_url}/models", timeout, self.process)
        deadline = time.monotonic() + timeout
        while f"router {router_id}" not in self.log.read_text(errors="replace"):
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise TimeoutError(f"the gateway did not serve router {router_id} within {timeout:.0f} s "
                                   f"(its log: {self.log})")
            time.sleep(0.2)

    def stop(self) -> int:
        """Stop the gateway as `make stop` does (SIGTERM: its spool file is finished) and the backends."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait()
        for backend in self.backends.values():
            backend.kill()
        return code


def start_gateway(settings: Settings, models: Sequence[str], log: Path) -> DemoGateway:
    """A test backend per model, the home's deployments file over them, and `uniroute gateway` started on a free
    port (not waited for: wait_until_serving)."""
    backends = {model: Backend(model, latency=BACKEND_LATENCY).start() for model in models}
    write_deployments(settings.deployments_file, backends, KEY_VAR)
    port = free_port()
    env = os.environ | {"UNIROUTE_HOME": str(settings.home), KEY_VAR: "demo-backends-take-any-key"}
    with open(log, "ab") as out:
        process = subprocess.Popen([sys.executable, "-m", "uniroute", "gateway", "--port", str(port)], env=env,
                                   stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    return DemoGateway(backends, process, port, log)


def send_batch(gateway: DemoGateway, prompts: pd.DataFrame, model: str = "uniroute",
               answered: Callable[[], None] | None = None) -> pd.DataFrame:
    """Each prompt sent as a chat request with the OpenAI client; per prompt its decision id (the response's
    x-uniroute-decision-id header) and the model that answered (the response's `model`), or the error. answered is
    called after each response or error (from the sending threads)."""
    import openai

    client = openai.OpenAI(base_url=gateway.base_url, api_key="any", max_retries=0, timeout=60)

    def one(text: str) -> tuple[str | None, str | None, str | None]:
        try:
            raw = client.chat.completions.with_raw_response.create(
                model=model, messages=[{"role": "user", "content": text}])
        except openai.OpenAIError as exc:
            return None, None, f"{type(exc).__name__}: {exc}"
        finally:
            if answered is not None:
                answered()
        return raw.headers.get("x-uniroute-decision-id"), raw.parse().model, None

    with ThreadPoolExecutor(CONCURRENCY) as pool:
        answers = list(pool.map(one, prompts["prompt"].tolist()))
    return pd.DataFrame({"prompt_id": prompts["prompt_id"].to_numpy(),
                         "decision_id": [a[0] for a in answers], "model": [a[1] for a in answers],
                         "error": [a[2] for a in answers]})
