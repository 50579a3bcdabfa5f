"""What the gateway adds to a request, side by side in one run: the same chat requests sent (a) straight to a local
OpenAI-compatible test backend, (b) through LiteLLM alone with the model fixed (the gateway's LiteLLM Router behind
the same FastAPI/uvicorn stack, nothing routed or recorded), (c) through the gateway (`model: uniroute/lambda-0`:
routed by the toy published router, called through LiteLLM, one decision record spooled per request).

Targets: uniroute's own cost, (c) against (b): <= 2 ms p50 added one request at a time, and >= 80% of (b)'s
requests per second per worker with instant backends; against the backend, (c) against (a): <= 10 ms p50 and
<= 30 ms p99 added at 100 requests/s, open-loop paced (each request sent at its scheduled time whatever the
others do; its latency counted from that time, so a server falling behind shows).

Set-up (benchmarks/speed/gateway_servers.py): each server its own process, one uvicorn worker each; instant
backends (no added latency) unless --latency. LiteLLM alone is built by the gateway's own
uniroute.gateway.deployments.litellm_router, so both run LiteLLM with the same settings (no retries of its own,
cooldowns, callbacks and telemetry off): whatever LiteLLM setting the gateway gains or loses by, so does (b).
The router is the toy one of tests/gateway/harness.py (two clusters, its embedder a rule): the embedding a real
embedder adds per prompt is measured by speed.embedding. Also the CPU milliseconds each server process spends per
request while saturated (less blurred than wall time by other users of a shared machine). Arms alternate over
--rounds rounds; medians of the rounds are reported. After its paced phase each server is given time to work off
a backlog and LiteLLM's cooldowns (settle) before anything else is measured.

Results: benchmarks/results/gateway.json. Run: `OMP_NUM_THREADS=1 .venv/bin/python -m benchmarks.speed.gateway`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from benchmarks.runner import RESULTS_DIR, load_average, machine_info, now_utc, write_result
from benchmarks.speed.gateway_servers import Servers, toy_home

RESULTS = RESULTS_DIR / "gateway.json"
PROMPT = "an easy question"  # the toy router sends it to cheap, the fixed model of LiteLLM alone
ARMS = ("direct", "litellm", "gateway")
TARGETS = {"added_p50_ms_over_litellm": 2.0, "rps_share_of_litellm": 0.8, "added_p50_ms_over_direct_paced": 10.0,
           "added_p99_ms_over_direct_paced": 30.0}


def body_of(arm: str) -> dict[str, Any]:
    model = "uniroute/lambda-0" if arm == "gateway" else "cheap"
    return {"model": model, "messages": [{"role": "user", "content": PROMPT}]}


async def one(client: httpx.AsyncClient, arm: str) -> None:
    response = await client.post("/chat/completions", json=body_of(arm))
    if response.status_code != 200:
        raise RuntimeError(f"{arm}: HTTP {response.status_code}: {response.text[:300]}")
    if arm == "gateway" and not response.headers.get("x-uniroute-decision-id"):
        raise RuntimeError("gateway: no decision id header")


def quantiles(seconds: list[float]) -> dict[str, float]:
    ms = np.array(seconds) * 1000
    return {"p50_ms": round(float(np.percentile(ms, 50)), 3), "p90_ms": round(float(np.percentile(ms, 90)), 3),
            "p99_ms": round(float(np.percentile(ms, 99)), 3), "n": len(seconds)}


async def sequential(client: httpx.AsyncClient, arm: str, requests: int) -> dict[str, float]:
    """One request at a time: each request's latency."""
    seconds = []
    for _ in range(requests):
        started = time.perf_counter()
        await one(client, arm)
        seconds.append(time.perf_counter() - started)
    return quantiles(seconds)


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds a process has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def saturated(client: httpx.AsyncClient, arm: str, concurrency: int, duration: float,
                    pid: int) -> dict[str, float]:
    """Closed loop at `concurrency` requests in flight for `duration` seconds: requests per second (one worker),
    and the CPU milliseconds the arm's server process spent per request (the backend's not counted; on a shared
    machine CPU time is blurred less by other users than wall time)."""
    done, stop = [0], time.perf_counter() + duration
    cpu_before = cpu_seconds(pid)

    async def worker() -> None:
        while time.perf_counter() < stop:
            await one(client, arm)
            done[0] += 1

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    cpu_ms = (cpu_seconds(pid) - cpu_before) * 1000 / max(done[0], 1)
    return {"requests_per_s": round(done[0] / (time.perf_counter() - started), 1), "concurrency": concurrency,
            "server_cpu_ms_per_request": round(cpu_ms, 3)}


async def paced(client: httpx.AsyncClient, arm: str, rate: float, requests: int) -> dict[str, Any]:
    """Open loop: request i sent at start + i / rate whatever the others do; latency from its scheduled time."""
    seconds: list[float] = []
    failed = [0]
    start = time.perf_counter() + 0.1

    async def at(i: int) -> None:
        scheduled = start + i / rate
        await asyncio.sleep(max(0.0, scheduled - time.perf_counter()))
        try:
            await one(client, arm)
        except (RuntimeError, httpx.HTTPError):
            failed[0] += 1
            return
        seconds.append(time.perf_counter() - scheduled)

    await asyncio.gather(*(at(i) for i in range(requests)))
    return {**quantiles(seconds), "rate_per_s": rate, "failed": failed[0]}


SETTLED_IN_A_ROW = 3  # prompt answers in a row that say a server is itself again
PROMPT_SECONDS = 1.0
IDLE_WINDOW_SECONDS = 1.0
IDLE_CPU_SHARE = 0.03  # of one core, with no request of ours in flight: a server at rest spends less


async def idle(pid: int, arm: str, deadline: float) -> None:
    """Wait until the server's process spends under IDLE_CPU_SHARE of a core over a window with nothing sent: the
    work an overloaded server carries past its last answer (requests whose client gave up, records queued behind
    answers, LiteLLM's own background tasks) shows only in its CPU, never in one probe's latency."""
    while True:
        before = cpu_seconds(pid)
        await asyncio.sleep(IDLE_WINDOW_SECONDS)
        if (cpu_seconds(pid) - before) / IDLE_WINDOW_SECONDS < IDLE_CPU_SHARE:
            return
        if time.perf_counter() > deadline:
            raise RuntimeError(f"{arm}: still busy after its paced phase")


async def settle(client: httpx.AsyncClient, arm: str, pid: int, seconds: float) -> float:
    """Wait until a server is itself again after the paced phase, and return how long that took. An arm that
    cannot keep up with the rate leaves a backlog it works off for a while, and its calls that timed out meanwhile
    make LiteLLM cool the deployment down. Measured straight away, the next round's first phase failed on that
    aftermath (requests refused with no deployment available); with prompt probes alone it started on the
    backlog, which probes answered in under a second do not see (stop 47: the gateway's next round at 17.5 CPU ms
    per request instead of 11.3). So: idle first, then prompt answers in a row."""
    started_settling = time.perf_counter()
    deadline, in_a_row = started_settling + seconds, 0
    await idle(pid, arm, deadline)
    while in_a_row < SETTLED_IN_A_ROW:
        if time.perf_counter() > deadline:
            raise RuntimeError(f"{arm}: not answering promptly {seconds:.0f} s after its paced phase")
        started = time.perf_counter()
        try:
            await one(client, arm)
        except (RuntimeError, httpx.HTTPError):
            in_a_row = 0
            await asyncio.sleep(1.0)
            continue
        in_a_row = in_a_row + 1 if time.perf_counter() - started < PROMPT_SECONDS else 0
    await idle(pid, arm, deadline)  # the probes' own records written
    return round(time.perf_counter() - started_settling, 1)


async def measure(urls: dict[str, str], pids: dict[str, int],
                  args: argparse.Namespace) -> dict[str, list[dict[str, Any]]]:
    limits = httpx.Limits(max_connections=256, max_keepalive_connections=256)
    clients = {arm: httpx.AsyncClient(base_url=url, limits=limits, timeout=30) for arm, url in urls.items()}
    rounds: dict[str, list[dict[str, Any]]] = {arm: [] for arm in ARMS}
    try:
        for arm in ARMS:  # warm: connections, LiteLLM's first-call set-up, the setting resolved once
            for _ in range(args.warmup):
                await one(clients[arm], arm)
        for r in range(args.rounds):
            for arm in ARMS if r % 2 == 0 else ARMS[::-1]:
                figures = {"sequential": await sequential(clients[arm], arm, args.sequential),
                           "saturated": await saturated(clients[arm], arm, args.concurrency, args.seconds,
                                                          pids[arm]),
                           "paced": await paced(clients[arm], arm, args.rate, int(args.rate * args.paced_seconds)),
                           "load_average": load_average()}
                figures["settle_s"] = await settle(clients[arm], arm, pids[arm], args.settle_seconds)
                rounds[arm].append(figures)
                print(f"round {r + 1} {arm}: {figures}", flush=True)
    finally:
        for client in clients.values():
            await client.aclose()
    return rounds


def median_of(rounds: list[dict[str, Any]], section: str, key: str) -> float:
    return round(statistics.median(r[section][key] for r in rounds), 3)


def summary(rounds: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Medians over rounds per arm, the added figures and each target met or not."""
    arms = {arm: {f"{section}_{key}": median_of(rounds[arm], section, key)
                  for section, keys in (("sequential", ("p50_ms", "p99_ms")),
                                        ("saturated", ("requests_per_s", "server_cpu_ms_per_request")),
                                        ("paced", ("p50_ms", "p99_ms", "failed")))
                  for key in keys} for arm in ARMS}
    gw, ll, direct = arms["gateway"], arms["litellm"], arms["direct"]
    added = {
        "added_p50_ms_over_litellm": round(gw["sequential_p50_ms"] - ll["sequential_p50_ms"], 3),
        "rps_share_of_litellm": round(gw["saturated_requests_per_s"] / ll["saturated_requests_per_s"], 3),
        "added_p50_ms_over_direct_paced": round(gw["paced_p50_ms"] - direct["paced_p50_ms"], 3),
        "added_p99_ms_over_direct_paced": round(gw["paced_p99_ms"] - direct["paced_p99_ms"], 3),
        "added_cpu_ms_per_request_over_litellm": round(gw["saturated_server_cpu_ms_per_request"]
                                                       - ll["saturated_server_cpu_ms_per_request"], 3),
        "litellm_added_p50_ms_over_direct": round(ll["sequential_p50_ms"] - direct["sequential_p50_ms"], 3),
    }
    met = {name: (added[name] >= target if name == "rps_share_of_litellm" else added[name] <= target)
           for name, target in TARGETS.items()}
    if gw["paced_failed"] or direct["paced_failed"]:  # quantiles of the requests that got through say nothing then
        met["added_p50_ms_over_direct_paced"] = met["added_p99_ms_over_direct_paced"] = False
    return {"arms": arms, "added": added, "targets": TARGETS, "target_met": met}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--sequential", type=int, default=300, help="requests one at a time, per arm and round")
    parser.add_argument("--concurrency", type=int, default=16, help="requests in flight when saturated")
    parser.add_argument("--seconds", type=float, default=5.0, help="seconds saturated, per arm and round")
    parser.add_argument("--rate", type=float, default=100.0, help="paced requests per second")
    parser.add_argument("--paced-seconds", type=float, default=10.0, help="seconds paced, per arm and round")
    parser.add_argument("--settle-seconds", type=float, default=120.0,
                        help="longest wait after a paced phase for the backlog and LiteLLM's cooldown to pass")
    parser.add_argument("--latency", type=float, default=0.0, help="backends' seconds before each answer")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    started, load_before = now_utc(), load_average()
    servers = Servers()
    with tempfile.TemporaryDirectory(prefix="uniroute-bench-gateway-") as tmp:
        home = Path(tmp) / "home"
        try:
            backends = {name: servers.launch("backend", "--name", name, "--latency", str(args.latency),
                                             log_dir=Path(tmp)) for name in ("cheap", "big")}
            toy_home(home, {name: b.port for name, b in backends.items()})
            gateway = servers.launch("gateway", "--home", str(home), log_dir=Path(tmp))
            litellm = servers.launch("litellm", "--home", str(home), "--model", "cheap", log_dir=Path(tmp))
            urls = {"direct": backends["cheap"].base_url, "litellm": litellm.base_url, "gateway": gateway.base_url}
            pids = {"direct": backends["cheap"].process.pid, "litellm": litellm.process.pid,
                    "gateway": gateway.process.pid}
            rounds = asyncio.run(measure(urls, pids, args))
        finally:
            servers.stop()
    result = {
        "benchmark": "speed.gateway",
        "started": started,
        "finished": now_utc(),
        "load_average_before": load_before,
        "load_average_after": load_average(),
        "setup": {"backends": "tests/gateway/backends.py, one process per model, latency "
                              f"{args.latency} s", "workers": "one uvicorn worker per server",
                  "router": "toy published router (tests/gateway/harness.py), its embedder a rule",
                  "client": "httpx.AsyncClient in the benchmark's process", **vars(args), "out": str(args.out)},
        **summary(rounds),
        "rounds": rounds,
        "machine": machine_info(),
    }
    write_result(result, args.out)
    print(result["added"], result["target_met"])


if __name__ == "__main__":
    main()
