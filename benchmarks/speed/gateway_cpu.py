"""Where a gateway request's CPU goes, in one process, the variants alternating in blocks so that other users of a
shared machine weigh on each alike (CPU time, not wall time): uniroute's own part (the setting read, the decision,
its record spooled; the toy router of tests/gateway/harness.py) and LiteLLM's call (the gateway's Router from
uniroute.gateway.deployments.litellm_router, against a local test backend in its own process), the latter also
under each LiteLLM switch that could cut per-call work without touching timeouts, cooldowns, streaming or usage.

Two variants are not settings but prices of a part: LiteLLM's acompletion without the Router (what the Router
adds: the pick, the cooldown read, its step machine) and LiteLLM's cost calculator answering at once (what the
cost of each response costs; the gateway prices calls itself, at the prices in force). Decision 0102 reads them.

Results: benchmarks/results/gateway_cpu.json. Run: `OMP_NUM_THREADS=1 .venv/bin/python -m benchmarks.speed.gateway_cpu`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from benchmarks.runner import RESULTS_DIR, load_average, machine_info, now_utc, write_result
from benchmarks.speed.gateway_servers import KEY_VAR, Servers, toy_home

RESULTS = RESULTS_DIR / "gateway_cpu.json"
PROMPT = "an easy question"
# LiteLLM module switches toggled around a call (none changes what the gateway relies on).
SWITCHES = {"turn_off_message_logging": True, "disable_token_counter": True, "logging": False}


def uniroute_part(home: Path, spool_dir: Path) -> Callable[[], None]:
    """One routed request's own work: the `model` field read, the decision, its record written to the spool."""
    from tests.gateway.harness import ToyEmbedder
    from uniroute.gateway.calls import Attempt
    from uniroute.gateway.live import LiveRouter, requested_setting
    from uniroute.gateway.traces import Happened, gateway_record
    from uniroute.pipeline.serving.spool import DecisionSpool

    loaded = LiveRouter(home / "published", home / "uniroute.duckdb", lambda source: ToyEmbedder()).loaded
    spool = DecisionSpool(spool_dir, max_seconds=3600.0)
    happened = Happened("cheap", [Attempt("cheap", None, 1.0)], 1.0, 2.0, 3, 4, 0.001)

    def one() -> None:
        setting = requested_setting("uniroute/lambda-0")
        assert setting is not None
        spool.write([gateway_record(loaded, loaded.timed_decide(PROMPT, setting), None, happened)])

    return one


def litellm_variants(deployments: Path) -> dict[str, Callable[[], Awaitable[Any]]]:
    import litellm

    from uniroute.gateway.deployments import litellm_router, read_deployments

    parsed = read_deployments(deployments)
    router = litellm_router(parsed)
    messages = [{"role": "user", "content": PROMPT}]
    cheap = parsed.model_list[0]["litellm_params"]

    def routed() -> Awaitable[Any]:
        return router.acompletion(model="cheap", messages=messages)

    def switched(name: str, value: Any) -> Callable[[], Awaitable[Any]]:
        async def call() -> Any:
            before = getattr(litellm, name)
            setattr(litellm, name, value)
            try:
                return await routed()
            finally:
                setattr(litellm, name, before)
        return call

    async def no_cost() -> Any:
        calculator = litellm.response_cost_calculator
        litellm.response_cost_calculator = lambda **kwargs: None
        try:
            return await routed()
        finally:
            litellm.response_cost_calculator = calculator

    def without_router() -> Awaitable[Any]:
        return litellm.acompletion(model=cheap["model"], api_base=cheap["api_base"], api_key=os.environ[KEY_VAR],
                                   timeout=cheap["timeout"], messages=messages)

    return {"litellm_router": routed, **{f"litellm_router {k}={v}": switched(k, v) for k, v in SWITCHES.items()},
            "litellm_without_router (not a setting)": without_router,
            "litellm_router, cost calculator answering at once (not a setting)": no_cost}


async def measure(home: Path, deployments: Path, args: argparse.Namespace) -> dict[str, list[float]]:
    """CPU ms per request of each variant per block (process CPU: LiteLLM hands part of each call to a thread)."""
    own = uniroute_part(home, home / "spool")
    calls = litellm_variants(deployments)
    for _ in range(args.warmup):
        own()
        for call in calls.values():
            await call()
    blocks: dict[str, list[float]] = {"uniroute": [], **{name: [] for name in calls}}
    for b in range(args.blocks):
        started = time.process_time()
        for _ in range(args.block * 4):
            own()
        blocks["uniroute"].append((time.process_time() - started) * 1000 / (args.block * 4))
        for name, call in (list(calls.items()) if b % 2 == 0 else list(calls.items())[::-1]):
            await asyncio.sleep(0.05)  # LiteLLM's logging tasks of the block before run before this one starts
            started = time.process_time()
            for _ in range(args.block):
                await call()
            await asyncio.sleep(0.02)
            blocks[name].append((time.process_time() - started) * 1000 / args.block)
    return blocks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--blocks", type=int, default=10, help="blocks per variant (they alternate)")
    parser.add_argument("--block", type=int, default=100, help="LiteLLM calls per block (uniroute's part: 4x)")
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    os.environ[KEY_VAR] = "sk-bench-not-a-key"
    started, load_before = now_utc(), load_average()
    servers = Servers()
    with tempfile.TemporaryDirectory(prefix="uniroute-bench-gateway-cpu-") as tmp:
        try:
            backends = {name: servers.launch("backend", "--name", name, log_dir=Path(tmp)) for name in ("cheap", "big")}
            home = Path(tmp) / "home"
            deployments = toy_home(home, {name: b.port for name, b in backends.items()})
            blocks = asyncio.run(measure(home, deployments, args))
        finally:
            servers.stop()
    medians = {name: round(statistics.median(values), 3) for name, values in blocks.items()}
    base = medians["litellm_router"]
    result = {
        "benchmark": "speed.gateway_cpu",
        "started": started,
        "finished": now_utc(),
        "load_average_before": load_before,
        "load_average_after": load_average(),
        "setup": {"what": "process CPU ms per request, in one process, variants alternating in blocks",
                  "backend": "tests/gateway/backends.py in its own process, no latency", **vars(args),
                  "out": str(args.out)},
        "cpu_ms_per_request": medians,
        "share_of_litellm_router": {name: round(value / base, 3) for name, value in medians.items()},
        "blocks": {name: [round(v, 3) for v in values] for name, values in blocks.items()},
        "machine": machine_info(),
    }
    write_result(result, args.out)
    for name, value in medians.items():
        print(f"{value:8.3f} ms  {name}")


if __name__ == "__main__":
    main()
