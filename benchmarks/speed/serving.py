"""The served model over HTTP against MLflow's own ceiling (targets: one-prompt requests at >= 70% of the
requests/s of a trivial pyfunc served the same way, and >= 10,000 decisions/s in batches of 100).

Set-up (not timed): the home of `speed.route_command` (synthetic logs, `uniroute build` with `--embedder`, default
static, `uniroute publish`, which registers the champion in the home's MLflow store), and a trivial pyfunc that
returns its input, saved with the champion's own signature (so MLflow checks the same input and params).

Three real `mlflow models serve --env-manager local --workers 1` servers run side by side, offline
(settings.apply_offline_environment): the trivial pyfunc, the champion recording its decisions to its spool (the
default), and the champion with UNIROUTE_RECORD_DECISIONS=false. One client (http.client, one kept-alive
connection per server, one request at a time) sends, in `--rounds` rounds alternating between the servers so that
load on a shared machine falls on all of them alike:
- `--requests` one-prompt requests (no params: the default setting), each a different prompt: requests per second,
  p50 and p99 latency;
- `--batches` requests of `--batch` prompts: decisions (prompts) per second.
Figures are medians over rounds; the ratio is the champion's one-prompt requests/s over the trivial pyfunc's.
The batch phase is a sample of its own: at 10 batches a round (1,000 decisions, a tenth of a second) one
scheduling hiccup on a shared machine moved a round by 10-50%; 100 batches a round over 7 rounds (70,000 decisions
per server, about 20 s for the three; the whole run takes ~2 minutes on a built home, plus the build) give medians
that a quiet machine repeats (on a loaded one the rounds still spread with the load).

Then the pyfunc's predict in a child process, without HTTP: `frame` as a Python caller gets it (a DataFrame), and
`served` as the scoring server calls it (its process marked as serving: the answer's rows, written to JSON by the
server's own `predictions_to_json`), each recording on and off, 10 x `--batches` batches.

Results: benchmarks/results/serving.json. Run:
`OMP_NUM_THREADS=1 .venv/bin/python -m benchmarks.speed.serving [--rounds 7]`.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from benchmarks.runner import REPO, RESULTS_DIR, SINGLE_THREAD, load_average, machine_info, now_utc, write_result
from benchmarks.speed.route_command import built_home, prompts_file

RESULTS = RESULTS_DIR / "serving.json"
BIN = Path(sys.executable).parent
HOST = "127.0.0.1"
START_SECONDS = 300  # a bound for a contended machine, not a measurement
TARGET_RATIO, TARGET_DECISIONS = 0.70, 10_000
# The trivial pyfunc, saved as code (no pickle): MLflow's serving path with nothing of uniroute behind it.
# Its predict has the champion's type hints, so MLflow handles its input the same way.
TRIVIAL_MODEL = '''from typing import Any

import mlflow
import pandas as pd
from mlflow.pyfunc import PythonModel


class Echo(PythonModel):
    def predict(self, context: Any, model_input: pd.DataFrame, params: dict[str, Any] | None = None) -> pd.DataFrame:
        return model_input


mlflow.models.set_model(Echo())
'''


def save_trivial(work: Path, tracking_uri: str) -> Path:
    """The trivial pyfunc in work/trivial-model, with the champion's signature."""
    import shutil

    import mlflow
    import mlflow.pyfunc

    from uniroute.pipeline.tracking import CHAMPION, REGISTERED_NAME

    mlflow.set_tracking_uri(tracking_uri)
    signature = mlflow.models.get_model_info(f"models:/{REGISTERED_NAME}@{CHAMPION}").signature
    code, path = work / "trivial_model.py", work / "trivial-model"
    code.write_text(TRIVIAL_MODEL)
    shutil.rmtree(path, ignore_errors=True)
    mlflow.pyfunc.save_model(str(path), python_model=str(code), signature=signature)
    return path


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


@contextmanager
def served(model_uri: str, env: dict[str, str], log_path: Path):
    """`mlflow models serve` of model_uri on a free port for the block (its process group stopped after); yields
    the port once /ping answers."""
    port = free_port()
    with log_path.open("wb") as log:
        server = subprocess.Popen(
            [str(BIN / "mlflow"), "models", "serve", "-m", model_uri, "--env-manager", "local", "-h", HOST,
             "-p", str(port), "--workers", "1"],
            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=log_path.parent)
    try:
        deadline = time.monotonic() + START_SECONDS
        while True:
            if server.poll() is not None:
                raise RuntimeError(f"mlflow models serve {model_uri} exited: {log_path.read_text()[-2000:]}")
            try:
                connection = http.client.HTTPConnection(HOST, port, timeout=5)
                connection.request("GET", "/ping")
                if connection.getresponse().status == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"{model_uri} did not answer /ping in {START_SECONDS} s")
            time.sleep(0.5)
        yield port
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait(timeout=30)


class Client:
    """One kept-alive HTTP connection to a server's /invocations; each call one request, its wall seconds."""

    def __init__(self, port: int) -> None:
        self.connection = http.client.HTTPConnection(HOST, port, timeout=120)

    def reconnect(self, prompt: str) -> None:
        """A new connection and one untimed request on it: uvicorn closes a connection idle for 5 s, as one is
        while the other servers take their turn."""
        self.connection.close()
        self.post([prompt])

    def post(self, prompts: list[str]) -> tuple[float, list[Any]]:
        body = json.dumps({"dataframe_split": {"columns": ["prompt"], "data": [[p] for p in prompts]}})
        started = time.perf_counter()
        self.connection.request("POST", "/invocations", body, {"Content-Type": "application/json"})
        response = self.connection.getresponse()
        payload = response.read()
        seconds = time.perf_counter() - started
        if response.status != 200:
            raise RuntimeError(f"/invocations answered {response.status}: {payload[:500]!r}")
        predictions = json.loads(payload)["predictions"]
        if len(predictions) != len(prompts):
            raise RuntimeError(f"{len(predictions)} predictions for {len(prompts)} prompts")
        return seconds, predictions


def one_round(client: Client, prompts: list[str], start: int, requests: int, batches: int,
              batch: int) -> dict[str, Any]:
    """One round against one server: one-prompt requests, then batches."""
    n = len(prompts)
    client.reconnect(prompts[start % n])
    singles = [client.post([prompts[(start + i) % n]])[0] for i in range(requests)]
    batched = [client.post([prompts[(start + i * batch + j) % n] for j in range(batch)])[0] for i in range(batches)]
    return {"requests_per_second": requests / sum(singles), "p50_ms": 1000 * statistics.median(singles),
            "p99_ms": 1000 * statistics.quantiles(singles, n=100)[98],
            "decisions_per_second": batches * batch / sum(batched)}


# The pyfunc's predict timed in a child process that imports the measured tree (argv: model URI, prompts file,
# batches, batch, mode); prints decisions per wall and per CPU second. Mode `served`: the process marked as MLflow's
# scoring server marks it, each answer written as the server writes it.
IN_PROCESS = '''import io, json, os, sys, time
uri, path, batches, batch, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
if mode == "served":
    os.environ["_MLFLOW_IS_IN_SERVING_ENVIRONMENT"] = "true"
import mlflow.pyfunc
import pandas as pd
from mlflow.pyfunc.scoring_server import predictions_to_json
prompts = json.loads(open(path).read())
model = mlflow.pyfunc.load_model(uri)
frames = [pd.DataFrame({"prompt": [prompts[(i * batch + j) % len(prompts)] for j in range(batch)]})
          for i in range(batches)]
def answer(frame):
    predictions = model.predict(frame)
    if mode == "served":
        predictions_to_json(predictions, io.StringIO())
answer(frames[0])
started, cpu_started = time.perf_counter(), time.process_time()
for frame in frames:
    answer(frame)
seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
print(json.dumps({"decisions_per_second": round(batches * batch / seconds),
                  "decisions_per_cpu_second": round(batches * batch / cpu_seconds)}))
'''


def in_process(model_uri: str, env: dict[str, str], prompts: list[str], batches: int, batch: int,
               work: Path, mode: str = "frame") -> dict[str, float]:
    """Decisions per wall and per CPU second of the pyfunc's predict called directly (in a child process that
    imports the measured tree), batches of `batch` prompts, without HTTP: mode `frame` the answer as a frame (a
    Python caller's), `served` as the scoring server makes and writes it (what its worker spends on routing)."""
    path = work / "prompts.json"
    path.write_text(json.dumps(prompts))
    done = subprocess.run([sys.executable, "-c", IN_PROCESS, model_uri, str(path), str(batches), str(batch), mode],
                          env=env, capture_output=True, text=True, cwd=work)
    if done.returncode:
        raise RuntimeError(f"in-process predict failed: {done.stderr[-1500:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def summary(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians over rounds of each figure, and each round's."""
    keys = rounds[0].keys()
    return {k: round(statistics.median(r[k] for r in rounds), 2) for k in keys} | {
        "rounds": [{k: round(v, 2) for k, v in r.items()} for r in rounds]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--embedder", default="static")
    parser.add_argument("--prompts", type=int, default=2000, help="prompts in the store's synthetic logs")
    parser.add_argument("--models", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--requests", type=int, default=300, help="one-prompt requests per server and round")
    parser.add_argument("--batches", type=int, default=100, help="batched requests per server and round")
    parser.add_argument("--batch", type=int, default=100, help="prompts per batched request")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--home", type=Path, default=None,
                        help="an already built home to serve (else one is built in --work)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/uniroute-bench-serving"),
                        help="scratch folder (never the repository)")
    parser.add_argument("--tree", type=Path, default=REPO,
                        help="the checkout whose uniroute the servers import (another commit: a before/after)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    from uniroute.pipeline.tracking import CHAMPION, REGISTERED_NAME
    from uniroute.settings import OFFLINE_ENVIRONMENT

    load_before = load_average()
    args.work.mkdir(parents=True, exist_ok=True)
    home = args.home or Path(built_home(args.work, args)["UNIROUTE_HOME"])
    tracking_uri = f"sqlite:///{(home / 'mlflow.db').resolve()}"
    _, prompts = prompts_file(args.work, 5000, args.seed)
    trivial = save_trivial(args.work, tracking_uri)
    # Offline as every uniroute server (nothing downloads); the measured tree's uniroute first on the path.
    env = {**os.environ, **OFFLINE_ENVIRONMENT, **SINGLE_THREAD, "MLFLOW_TRACKING_URI": tracking_uri,
           "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(args.tree.resolve()),
           "UNIROUTE_HOME": str(args.work / "served-home")}
    champion = f"models:/{REGISTERED_NAME}@{CHAMPION}"
    variants = {"trivial": (str(trivial), env), "recording_on": (champion, env),
                "recording_off": (champion, env | {"UNIROUTE_RECORD_DECISIONS": "false"})}
    rounds: dict[str, list[dict[str, Any]]] = {name: [] for name in variants}
    with ExitStack() as stack:
        clients = {name: Client(stack.enter_context(served(uri, variant_env, args.work / f"serve-{name}.log")))
                   for name, (uri, variant_env) in variants.items()}
        for client in clients.values():  # warm: first requests load lazily what the rest reuse
            for i in range(20):
                client.post(prompts[i:i + 1])
            client.post(prompts[:args.batch])
        load_start = load_average()
        for r in range(args.rounds):
            for name in variants:
                start = r * (args.requests + args.batches * args.batch)
                rounds[name].append(one_round(clients[name], prompts, start, args.requests, args.batches, args.batch))
    predict = {f"{name}{suffix}": in_process(champion, env | {"UNIROUTE_HOME": str(args.work / "in-process-home"),
                                                              "UNIROUTE_RECORD_DECISIONS": record},
                                             prompts, 10 * args.batches, args.batch, args.work, mode)
               for mode, suffix in (("frame", ""), ("served", "_served"))
               for name, record in (("recording_on", "true"), ("recording_off", "false"))}
    spooled = sum(len(p.read_text().splitlines())
                  for p in (args.work / "served-home" / "spool" / "decisions").glob("*.jsonl"))
    figures = {name: summary(r) for name, r in rounds.items()}
    ceiling = figures["trivial"]["requests_per_second"]
    result = {
        "benchmark": "serving",
        "date": now_utc(),
        "config": {"embedder": args.embedder, "store_prompts": args.prompts, "models": args.models,
                   "rounds": args.rounds, "requests": args.requests, "batches": args.batches, "batch": args.batch,
                   "seed": args.seed, "tree": str(args.tree),
                   "server": "mlflow models serve --env-manager local --workers 1",
                   "client": "http.client, one kept-alive connection per server, one request at a time",
                   "request": "dataframe_split of prompts, no params (the default setting)"},
        "machine": machine_info() | {"load_average_before": load_before, "load_average_at_start": load_start,
                                     "load_average_after": load_average()},
        "served": figures,
        "ratio_to_trivial": {name: round(figures[name]["requests_per_second"] / ceiling, 3)
                             for name in ("recording_on", "recording_off")},
        "target_ratio": TARGET_RATIO,
        "target_decisions_per_second": TARGET_DECISIONS,
        "in_process_predict": predict | {"what": f"pyfunc predict called directly, {10 * args.batches} batches of "
                                                 f"{args.batch} prompts, no HTTP; *_served: as the scoring server "
                                                 "calls it, its answer written by predictions_to_json"},
        "records_spooled_while_serving": spooled,
    }
    write_result(result, args.out)
    print(json.dumps({name: {k: v for k, v in f.items() if k != "rounds"} for name, f in figures.items()}),
          json.dumps(result["ratio_to_trivial"]), json.dumps(predict), f"load {load_start} -> {load_average()}",
          f"wrote {args.out}", sep="\n")


if __name__ == "__main__":
    main()
