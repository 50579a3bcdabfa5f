"""The gateway under load while a backend dies: `--requests` chat requests (default 1,000) through the OpenAI Python
client at `--concurrency` (default 32) in flight, `model: uniroute/lambda-0` over the toy published router (a
prompt saying "hard" goes to big, any other to cheap; big falls back to cheap), big's backend process killed
(SIGKILL) after `--kill-after` answers.

Checked, and written to the JSON (the run exits 1 when one fails): no request failed; no request sent after the
kill was answered by big; every request big would have taken after the kill shows big's failed attempt and then
cheap answering in its record; after `uniroute inbox` (operations.inbox) the decisions table holds exactly one
record per request, each with the model that answered. Also reported: requests per second and latency quantiles
(a run for correctness under load, not a latency target; speed.gateway holds those).

Set-up: benchmarks/speed/gateway_servers.py (each backend and the gateway its own process, one uvicorn worker).
The tests keep a small version of this run (tests/gateway/test_gateway_load.py: 80 requests at 8).

Results: benchmarks/results/gateway_failover.json. Run:
`OMP_NUM_THREADS=1 .venv/bin/python -m benchmarks.speed.gateway_failover`.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.runner import RESULTS_DIR, load_average, machine_info, now_utc, write_result
from benchmarks.speed.gateway_servers import Servers, toy_home

RESULTS = RESULTS_DIR / "gateway_failover.json"


def run(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    import openai

    from uniroute import operations, store

    servers = Servers()
    home = tmp / "home"
    try:
        backends = {name: servers.launch("backend", "--name", name, "--latency", str(args.latency), log_dir=tmp)
                    for name in ("cheap", "big")}
        toy_home(home, {name: b.port for name, b in backends.items()})
        gateway = servers.launch("gateway", "--home", str(home), log_dir=tmp)
        client = openai.OpenAI(base_url=gateway.base_url, api_key="unused", max_retries=0, timeout=60,
                               http_client=None)
        lock, killed_at = threading.Lock(), [float("inf")]
        answered = [0]

        def one(i: int) -> dict[str, Any]:
            sent = time.perf_counter()
            error = None
            try:
                raw = client.chat.completions.with_raw_response.create(
                    model="uniroute/lambda-0",
                    messages=[{"role": "user", "content": f"{'a hard' if i % 2 else 'an easy'} question {i}"}])
                decision_id, model = raw.headers.get("x-uniroute-decision-id"), raw.parse().model
            except openai.OpenAIError as exc:
                decision_id, model, error = None, None, f"{type(exc).__name__}: {exc}"[:300]
            done = time.perf_counter()
            with lock:
                answered[0] += 1
                if answered[0] == args.kill_after:
                    backends["big"].stop(signal.SIGKILL)
                    killed_at[0] = time.perf_counter()
            return {"i": i, "sent": sent, "seconds": done - sent, "decision_id": decision_id, "model": model,
                    "error": error}

        started = time.perf_counter()
        with ThreadPoolExecutor(args.concurrency) as pool:
            answers = list(pool.map(one, range(args.requests)))
        seconds = time.perf_counter() - started
        gateway.stop()  # SIGINT: the gateway finishes its spool file
    finally:
        servers.stop()
    ctx = replace(operations.Context.at(home / "uniroute.duckdb", home / "published"), inbox_dir=home / "inbox",
                  settle_seconds=0.0)
    inbox = operations.inbox(ctx, onboard_landed=False)
    con = store.open_read_only(home / "uniroute.duckdb")
    try:
        rows = con.execute("select decision_id, model, answered_by, attempts from decisions").fetchall()
    finally:
        con.close()
    records: dict[str, list[tuple]] = {}
    for row in rows:
        records.setdefault(str(row[0]), []).append(row)
    failed = [a for a in answers if a["error"] is not None]
    after_kill = [a for a in answers if a["sent"] > killed_at[0]]
    big_after_kill = [a for a in after_kill if a["model"] == "big"]
    fell_back, not_shown = 0, []
    for a in after_kill:
        record = records.get(str(a["decision_id"]), [None])[0]
        if record is None or record[1] != "big":
            continue
        attempts = json.loads(record[3]) if isinstance(record[3], str) else list(record[3] or [])
        shown = (record[2] == "cheap" and len(attempts) >= 2 and attempts[0]["model"] == "big"
                 and attempts[0]["error"] and attempts[-1]["model"] == "cheap" and attempts[-1]["error"] is None)
        fell_back += bool(shown)
        if not shown:
            not_shown.append(str(a["decision_id"]))
    ids = [str(a["decision_id"]) for a in answers if a["decision_id"]]
    mismatched = [i for i, a in ((str(a["decision_id"]), a) for a in answers if a["decision_id"])
                  if records.get(i) and records[i][0][2] != a["model"]]
    ms = np.array([a["seconds"] for a in answers]) * 1000
    checks = {
        "no_failed_request": not failed,
        "big_answers_nothing_after_the_kill": not big_after_kill,
        "every_request_big_would_have_taken_shows_its_fallback": not not_shown and fell_back > 0,
        "one_record_per_request": len(rows) == args.requests and set(records) == set(ids)
        and all(len(v) == 1 for v in records.values()),
        "each_record_names_the_model_that_answered": not mismatched,
        "inbox_ran_clean": not inbox.failed,
    }
    return {
        "checks": checks,
        "passed": all(checks.values()),
        "requests": args.requests,
        "concurrency": args.concurrency,
        "failed_requests": len(failed),
        "failed_examples": [a["error"] for a in failed[:5]],
        "sent_after_kill": len(after_kill),
        "big_after_kill_fell_back_to_cheap": fell_back,
        "fallback_not_shown_examples": not_shown[:5],
        "answered_by": {m: sum(1 for a in answers if a["model"] == m) for m in ("cheap", "big")},
        "decision_records": len(rows),
        "requests_per_s": round(args.requests / seconds, 1),
        "latency_ms": {q: round(float(np.percentile(ms, p)), 1) for q, p in (("p50", 50), ("p90", 90), ("p99", 99))},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--kill-after", type=int, default=300, help="answers before big's backend is killed")
    parser.add_argument("--latency", type=float, default=0.02, help="backends' seconds before each answer")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    started, load_before = now_utc(), load_average()
    with tempfile.TemporaryDirectory(prefix="uniroute-bench-failover-") as tmp:
        figures = run(args, Path(tmp))
    result = {"benchmark": "speed.gateway_failover", "started": started, "finished": now_utc(),
              "load_average_before": load_before, "load_average_after": load_average(),
              "setup": {"client": "OpenAI Python client, one thread per request in flight",
                        "servers": "backends and gateway each their own process, one uvicorn worker",
                        **vars(args), "out": str(args.out)},
              **figures, "machine": machine_info()}
    write_result(result, args.out)
    print(json.dumps({k: result[k] for k in ("checks", "failed_requests", "requests_per_s", "latency_ms")}))
    sys.exit(0 if figures["passed"] else 1)


if __name__ == "__main__":
    main()
