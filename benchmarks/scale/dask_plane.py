"""The build's Dask data plane at scale: embed N prompts into the Parquet dataset and cluster them, on an external
scheduler with W worker processes (one thread each), measuring the driver's peak RSS and the wall time.

What runs is what `uniroute build` with UNIROUTE_DASK_ADDRESS and `operations.cluster_on_dask` do: the embedding
(one task per TASK_TEXTS prompts, each writing its Parquet file), then K-means over the training prompts'
partitions on the workers and every prompt's cluster written back. The driver is a child process of this script
(`--driver`), so its peak RSS (VmHWM) is its own, and a thread samples it per phase; the scheduler and workers
are `python -m distributed.cli.*` processes.

The store holds `--prompts` prompts x `--models` LLMs of synthetic logs (uniroute.synth). Neither step reads the
LLMs' results (embedding and clustering see prompts only), so the default is 2 LLMs: ingesting 1M x 100 result
rows takes 5+ minutes of both cores and changes nothing measured here (say `--models 100` to do it anyway).
The embedder is `static` (its model file is built once into `--work`/cache).

Per-partition timings (the Dask task stream) give the 10M extrapolation: embedding tasks scale with prompts and
divide by workers; a K-means step's block tasks likewise.

Run: `OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python -m benchmarks.scale.dask_plane [--prompts 1000000]
[--workers 2,1] [--k 16]`; results in benchmarks/results/dask_plane.json.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import resource
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.runner import REPO, RESULTS_DIR

RESULT = RESULTS_DIR / "dask_plane.json"


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _start(args: list[str], log: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    return subprocess.Popen(["nice", "-n", "10", sys.executable, "-m", *args], env=env, cwd=REPO,
                            stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)


def _stop(process: subprocess.Popen) -> None:
    import signal

    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)


def prepare(work: Path, prompts: int, models: int, llms: int | None = None) -> Path:
    """A store with the synthetic logs ingested (kept between runs with the same size); its home. llms: that many
    LLMs in all, the ones beyond the ingested `models` fabricated straight into the store (add_llms)."""
    from uniroute import operations
    from uniroute.embed import make_embedder
    from uniroute.synth import write_synthetic_logs

    # The static model file is built once per machine from MiniLM (torch in memory): here, not in the driver.
    make_embedder("static", progress=False, cache_dir=work / "cache")
    home = work / (f"home-{prompts}x{models}" if not llms else f"home-{prompts}x{llms}llms")
    if (home / "ready").exists():
        return home
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    t0 = time.perf_counter()
    synth = write_synthetic_logs(work / "logs", n_prompts=prompts, n_models=models, n_topics=16, seed=0)
    operations.ingest(operations.Context.at(home / "uniroute.duckdb"), synth.logs_path)
    note = f"{time.perf_counter() - t0:.1f} s to generate and ingest {models} LLMs"
    if llms and llms > models:
        t1 = time.perf_counter()
        add_llms(home / "uniroute.duckdb", work / "logs" / "prompts.parquet", models, llms)
        note += f", {time.perf_counter() - t1:.1f} s to add {llms - models} LLMs' results in DuckDB"
    shutil.rmtree(work / "logs")
    (home / "ready").write_text(note + "\n")
    return home


# The fabricated LLMs' results, in DuckDB (a 100M-row CSV ingest would take longer than the build measured). Each
# LLM has a skill per latent topic (the synthetic prompts' topic, which their embeddings carry) and a cost that
# grows with its mean skill; a prompt's score is a Bernoulli draw of that skill, all from hashes (deterministic).
ADD_LLMS_SQL = """
create temp table llm_skills as
select 'synth-llm-' || lpad(j::varchar, 3, '0') as model, t.topic,
       0.1 + 0.85 * ((hash(j, t.topic) % 10000) / 10000.0) as skill
from range($first, $llms) as r(j), (select distinct topic from read_parquet($latent)) as t;
insert into models (model, status, first_seen) select distinct model, 'active', now() from llm_skills;
insert into results (prompt_id, model, score, cost, source_file, file_hash, ingested_at)
select l.prompt_id, s.model,
       case when (hash(l.prompt_id, s.model) % 10000) / 10000.0 < s.skill then 1.0 else 0.0 end,
       c.cost * (0.95 + 0.1 * ((hash(s.model, l.prompt_id, 'cost') % 1000) / 1000.0)),
       'benchmarks/scale/dask_plane.py', 'fabricated', now()
from read_parquet($latent) as l
join llm_skills as s on s.topic = l.topic
join (select model, power(10, -3 + 2 * avg(skill)) as cost from llm_skills group by model) as c on c.model = s.model;
"""


def add_llms(db: Path, latent: Path, first: int, llms: int) -> None:
    """LLMs first..llms-1 fabricated into the store: a model row and one result per prompt each."""
    import duckdb

    con = duckdb.connect(str(db))
    try:
        con.execute("set memory_limit = '2GB'")
        for statement in (part.strip() for part in ADD_LLMS_SQL.split(";")):
            if statement:
                con.execute(statement, {k: v for k, v in {"first": first, "llms": llms, "latent": str(latent)}.items()
                                        if f"${k}" in statement})
        con.execute("checkpoint")
    finally:
        con.close()


def _task_seconds(stream: list[dict], prefix: str) -> list[float]:
    """Compute seconds of each task of the stream whose key starts with prefix."""
    out = []
    for task in stream:
        if str(task["key"]).strip("('").startswith(prefix):
            out += [s["stop"] - s["start"] for s in task["startstops"] if s["action"] == "compute"]
    return out


def _peak_rss_mb() -> float:
    """This process's peak RSS since it exec'd (VmHWM): ru_maxrss keeps the forking parent's RSS across exec, so a
    driver started after `prepare` ingested 1M prompts reported the parent's 1.6 GB before it did anything."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class RssSampler:
    """The driver's resident memory sampled every `every` seconds on a thread, its peak per named phase: where the
    peak comes from (ru_maxrss gives the whole run's peak only)."""

    def __init__(self, every: float = 0.2) -> None:
        import psutil

        self._process, self._every, self._phase = psutil.Process(), every, "start"
        self.peaks: dict[str, float] = {}
        self.timeline: list[tuple[float, float]] = []  # (seconds since start, MB), to set beside the driver's log
        self._t0 = time.perf_counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            self.sample()

    def sample(self) -> None:
        mb = self._process.memory_info().rss / 2**20
        self.timeline.append((round(time.perf_counter() - self._t0, 1), round(mb, 1)))
        self.peaks[self._phase] = round(max(self.peaks.get(self._phase, 0.0), mb), 1)

    def phase(self, name: str) -> None:
        self.sample()
        self._phase = name
        self.sample()

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def handler(self) -> logging.Handler:
        """A logging handler that starts a phase at every uniroute record (the build's stages with progress on):
        the peak per stage of the build, not only per phase of this driver."""
        sampler = self

        class StageHandler(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                if record.name.startswith("uniroute"):
                    text = re.sub(r" \([\d,]+ s\)$", "", record.getMessage())[:90]
                    sampler.phase(f"{sampler._phase.split(' | ')[0]} | {text}")

        return StageHandler()

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()


def driver(address: str, home: Path, k: int, seed: int, build: bool = False) -> dict[str, Any]:
    """The driver's part (a child process): embed, then cluster, on the scheduler at address; build: embed, then the
    whole build (`operations.build` with the address: its K-means refit and cluster assignments on the workers)."""
    from distributed import Client, get_task_stream

    from uniroute import operations

    os.environ["UNIROUTE_HOME"] = str(home)
    logging.basicConfig(level=logging.INFO, format="%(relativeCreated)8.0f ms %(name)s: %(message)s")
    ctx = operations.Context.at(home / "uniroute.duckdb", cache_dir=home.parent / "cache")
    out: dict[str, Any] = {}
    with RssSampler() as rss, Client(address, timeout=60) as client:
        logging.getLogger().addHandler(rss.handler())
        out["rss_mb_before"] = _peak_rss_mb()
        t0 = time.perf_counter()
        rss.phase("embed")
        with get_task_stream(client) as embed_stream:
            embedded = operations.embed_new_prompts(ctx, "static", client=client)
        out["embed_seconds"] = time.perf_counter() - t0
        out["prompts"] = embedded.prompts
        if build:
            out.update(_build_phase(ctx, address, seed, client, rss, embedded))
            out["wall_seconds"] = time.perf_counter() - t0
            out["embed_tasks"] = _task_summary(_task_seconds(embed_stream.data, "embed-partition"))
            out["workers"] = len(client.scheduler_info()["workers"])
            rss.phase("end")
            return _finish(out, rss, home)
        t1 = time.perf_counter()
        rss.phase("cluster")
        with get_task_stream(client) as cluster_stream:
            clusters = operations.cluster_on_dask(ctx, "static", k, seed, client=client)
        out["cluster_seconds"] = time.perf_counter() - t1
        out["cluster_steps"] = {name: round(s, 2) for name, s in clusters.seconds.items()}
        out["n_train"] = clusters.n_train
        out["wall_seconds"] = time.perf_counter() - t0
        embed_tasks = _task_seconds(embed_stream.data, "embed-partition")
        partial_tasks = _task_seconds(cluster_stream.data, "_partial")
        out["embed_tasks"] = {"count": len(embed_tasks), "mean_seconds": sum(embed_tasks) / max(len(embed_tasks), 1)}
        out["kmeans_block_tasks"] = {"count": len(partial_tasks),
                                     "mean_seconds": sum(partial_tasks) / max(len(partial_tasks), 1)}
        out["workers"] = len(client.scheduler_info()["workers"])
        rss.phase("end")
    return _finish(out, rss, home)


def _finish(out: dict[str, Any], rss: RssSampler, home: Path) -> dict[str, Any]:
    out["driver_rss_mb_peak_by_phase"] = rss.peaks
    (home.parent / "driver_rss_timeline.json").write_text(json.dumps(rss.timeline[::5]))
    out["driver_peak_rss_mb"] = _peak_rss_mb()
    return out


def _task_summary(seconds: list[float]) -> dict[str, float]:
    return {"count": len(seconds), "mean_seconds": sum(seconds) / max(len(seconds), 1)}


def _build_phase(ctx: Any, address: str, seed: int, client: Any, rss: RssSampler, embedded: Any) -> dict[str, Any]:
    """The nightly build as `uniroute build` with UNIROUTE_DASK_ADDRESS runs it (every router kind; MLflow off:
    its recording is not the data plane), the Dask tasks it ran and its phases. The embedding just measured is
    the build's own fill (`embedded`): `uniroute build` embeds, then builds, as this does."""
    from distributed import get_task_stream

    from uniroute import operations

    rss.phase("build")
    t0 = time.perf_counter()
    with get_task_stream(client) as stream:
        result = operations.build(ctx, "static", seed, dask_address=address, embedded=embedded, progress=True)
    tasks = stream.data
    phases = {name: round(v, 1) for name, v in result.seconds.items()}
    return {"build_seconds": time.perf_counter() - t0, "build_phases": phases,
            "build_kind": result.served, "build_models": len(result.models), "build_n_prompts": result.n_prompts,
            "build_line": result.line(), "kmeans_block_tasks": _task_summary(_task_seconds(tasks, "_partial")),
            "assign_tasks": _task_summary(_task_seconds(tasks, "_assign_partition")),
            "kmeans_read_tasks": _task_summary(_task_seconds(tasks, "_rows"))}


def run(work: Path, home: Path, workers: int, k: int, seed: int, build: bool = False) -> dict[str, Any]:
    """One measured run on a fresh cluster of `workers` processes; the embedding dataset starts empty."""
    from deployments.serve import free_port

    shutil.rmtree(home / "embeddings", ignore_errors=True)
    if build:  # the build's router versions and assignments go too: each run builds on the same store
        _forget_builds(home / "uniroute.duckdb")
    address = f"tcp://127.0.0.1:{free_port()}"
    logs = work / f"cluster-{workers}"
    logs.mkdir(exist_ok=True)
    processes = [_start(["distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port",
                         address.rsplit(":", 1)[1], "--dashboard-address", "127.0.0.1:0"], logs / "scheduler.log")]
    try:
        processes += [_start(["distributed.cli.dask_worker", address, "--nworkers", str(workers), "--nthreads", "1",
                              "--memory-limit", "0", "--no-dashboard"], logs / "workers.log")]
        load_start = _load()
        child = subprocess.run([sys.executable, "-m", "benchmarks.scale.dask_plane", "--driver", address,
                                "--home", str(home), "--k", str(k), "--seed", str(seed),
                                *(["--build"] if build else [])],
                               cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO), "UNIROUTE_MLFLOW": "false"},
                               capture_output=True, text=True)
        (logs / "driver.log").write_text(child.stderr)
        if child.returncode != 0:
            raise RuntimeError(f"driver failed: {child.stderr[-3000:]}")
        result = json.loads(child.stdout.strip().splitlines()[-1])
        result.update(load_average_start=load_start, load_average_end=_load())
        return result
    finally:
        for process in reversed(processes):
            _stop(process)


def _forget_builds(db: Path) -> None:
    import duckdb

    con = duckdb.connect(str(db))
    try:
        for table in ("cluster_assignments", "centroids", "psi", "router_costs", "router_metrics", "router_candidates",
                      "routers"):
            con.execute(f"delete from {table}")
    finally:
        con.close()


def extrapolate(run2: dict[str, Any], prompts: int, target: int = 10_000_000) -> dict[str, Any]:
    """Minutes for `target` prompts on N workers, from the measured per-task seconds (CPU-bound tasks divide by
    workers; the K-means step count taken as measured)."""
    scale = target / prompts
    embed_cpu = run2["embed_tasks"]["count"] * run2["embed_tasks"]["mean_seconds"] * scale
    kmeans_cpu = run2["kmeans_block_tasks"]["count"] * run2["kmeans_block_tasks"]["mean_seconds"] * scale
    return {f"{n}_workers_minutes": round((embed_cpu + kmeans_cpu) / n / 60, 1) for n in (2, 8, 32, 128)} | {
        "embed_cpu_seconds": round(embed_cpu), "kmeans_cpu_seconds": round(kmeans_cpu)}


def extrapolate_build(run: dict[str, Any], prompts: int, target: int = 10_000_000) -> dict[str, Any]:
    """Minutes of the whole build (embedding, then `uniroute build`) for `target` prompts on N workers, from one
    measured run's phases and Dask task timings. What divides by workers: the embedding, K-means refit and
    cluster-assignment tasks (their CPU seconds x target/prompts / N). What grows in the driver alone: the loading
    (one DuckDB pass over the results, x target/prompts) and the recording less its assignment tasks (DuckDB's
    insert of every prompt's cluster and Psi's group-by over the validation results, x target/prompts). What stays:
    the tuning and the held-out scoring (fixed-size samples); the refit runs beside the tuning (build_refits), so
    the fit phase is the longer of the measured fit and the refit's tasks / N."""
    scale, workers, phases = target / prompts, run["workers"], run["build_phases"]

    def cpu(name: str) -> float:
        tasks = run.get(name, {"count": 0, "mean_seconds": 0.0})  # kmeans_read_tasks: recorded since 2026-11-26
        return tasks["count"] * tasks["mean_seconds"] * scale

    embed, assign = cpu("embed_tasks"), cpu("assign_tasks")
    refit = cpu("kmeans_block_tasks") + cpu("kmeans_read_tasks")
    record_driver = max(phases["record"] - assign / scale / workers, 0.0) * scale
    load = phases["load_and_embed"] * scale
    out: dict[str, Any] = {"embed_cpu_seconds": round(embed), "refit_cpu_seconds": round(refit),
                           "assign_cpu_seconds": round(assign), "driver_load_seconds": round(load),
                           "driver_record_seconds": round(record_driver),
                           "driver_fit_and_evaluate_seconds": round(phases["fit"] + phases["evaluate"])}
    for n in (2, 8, 32, 128):
        seconds = (embed / n + load + max(phases["fit"], refit / n) + phases["evaluate"] + record_driver + assign / n)
        out[f"{n}_workers_minutes"] = round(seconds / 60, 1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--prompts", type=int, default=1_000_000)
    parser.add_argument("--models", type=int, default=2, help="LLMs in the ingested synthetic logs")
    parser.add_argument("--llms", type=int, help="LLMs in all: the ones beyond --models fabricated into the store")
    parser.add_argument("--build", action="store_true", help="run the whole build after the embedding, not K-means")
    parser.add_argument("--workers", default="2,1")
    parser.add_argument("--k", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", type=Path, default=Path("/tmp/uniroute-bench-dask"))
    parser.add_argument("--out", type=Path, default=RESULT, help="the results' JSON (default dask_plane.json)")
    parser.add_argument("--driver")
    parser.add_argument("--home", type=Path)
    args = parser.parse_args()
    if args.driver:
        print(json.dumps(driver(args.driver, args.home, args.k, args.seed, args.build)))
        return
    args.work.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    home = prepare(args.work, args.prompts, args.models, args.llms)
    runs = {}
    for n in (int(w) for w in args.workers.split(",")):
        runs[str(n)] = run(args.work, home, n, args.k, args.seed, args.build)
        print(json.dumps({n: runs[str(n)]}), flush=True)
    result = {"benchmark": "dask_plane", "prompts": args.prompts, "models": args.models,
              "llms": args.llms or args.models,
              "build": args.build, "k": args.k,
              "nproc": os.cpu_count(), "prepare": (home / "ready").read_text().strip(), "runs": runs,
              "uptime": subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(),
              "seconds_total": round(time.perf_counter() - started, 1)}
    if "1" in runs and "2" in runs:
        result["one_over_two_workers"] = round(runs["1"]["wall_seconds"] / runs["2"]["wall_seconds"], 2)
    if "2" in runs and not args.build:  # the extrapolation counts embedding and K-means tasks only
        result["extrapolated_10m"] = extrapolate(runs["2"], args.prompts)
    elif "2" in runs:
        result["extrapolated_10m_build"] = extrapolate_build(runs["2"], args.prompts)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
