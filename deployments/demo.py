"""`make run`: the whole story on real data, end to end, through a real Prefect server.

1. Ingest the benchmark logs (RouterBench from ../shared, or synthetic logs where it is absent) through the
   inbox flow, holding one LLM back.
2. Nightly build: embed, tune every router kind (K-means, count-aware K-means, LearnedMap, K-NN), serve the
   one chosen on validation prompts (its candidates' table is printed), evaluate, MLflow.
3. Publish the routing tables.
4. Drop the held-back LLM's validation results into the inbox: the inbox flow emits
   `uniroute.results.landed`, the served onboarding deployment is triggered by it and makes the LLM
   routable without refitting (a Psi row on the frozen clusters, or its labels in the K-NN table).
5. Republish, and show with SQL where the new LLM now takes traffic; end with the evaluation table.
6. Traffic through the gateway (started in the background after step 3, over a local OpenAI-compatible test
   backend per LLM: deployments/demo_traffic.py): a batch of test prompts is sent with the OpenAI client at
   `model="uniroute"` (the default setting; each request recorded to the spool; one sentence says why when every
   prompt goes to one model), the gateway stops, their outcomes (the logs' scores of the answering LLMs) land in
   the inbox, the inbox flow ingests both, and one SQL query compares the realised quality with what the router
   expected.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

from deployments.demo_traffic import CONCURRENCY, DemoGateway, send_batch, start_gateway
from deployments.heartbeat import heartbeat
from uniroute.pipeline.build.result import tiny_table_note
from uniroute.pipeline.serving.route import DEFAULT_SETTING, default_setting_line
from uniroute.pipeline.serving.spool import PART, SUFFIX
from uniroute.progress import EVERY_SECONDS
from uniroute.settings import Settings, apply_offline_environment

DEMO_MARKER = ".uniroute-demo"
KEPT_DECISIONS = "decisions-before-demo"  # a reused home's earlier route records, out of the inbox's way


def say(message: str) -> None:
    print(f"\n== {message}", flush=True)


def route_records_only(settings: Settings) -> list[Path] | None:
    """The files of a home that holds nothing but decision records a route wrote (its spool; cache/ aside), or None
    when it holds anything else."""
    files = [p for p in settings.home.rglob("*") if p.is_file() and not p.is_relative_to(settings.cache_dir)]
    spooled = [p for p in files if p.parent == settings.spool_dir and p.name.startswith("decisions-")
               and p.name.endswith((SUFFIX, SUFFIX + PART))]
    return files if len(spooled) == len(files) else None


def fresh_home(settings: Settings) -> None:
    """Start from an empty UNIROUTE_HOME (but its built embedder models); refuse to wipe one the demo did not create,
    unless it holds only the decision records a route wrote: those are set aside in the home, and it is reused."""
    home = settings.home
    kept = home / KEPT_DECISIONS
    if home.exists() and any(home.iterdir()) and not (home / DEMO_MARKER).exists():
        records = route_records_only(settings)
        if records is None:
            sys.exit(f"error: {home} holds state `make run` did not create and will not wipe; move it aside "
                     f"(mv {home} {home}.old) or give the demo an empty home: UNIROUTE_HOME=/tmp/demo make run")
        if records:
            shutil.move(settings.spool_dir, kept)  # the demo's own traffic goes through a fresh spool
            print(f"reusing {home}: it held only {len(records)} decision record file(s) a route wrote, kept in {kept}")
    if home.exists():
        for path in home.iterdir():
            # models built from the local MiniLM are kept (building takes a minute), and records set aside above
            if path not in (settings.cache_dir, kept):
                shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
    home.mkdir(parents=True, exist_ok=True)
    (home / DEMO_MARKER).write_text("created by `make run`; rerunning `make run` wipes this folder but cache/ "
                                    f"and {KEPT_DECISIONS}/\n")


def demo_logs(settings: Settings, work: Path) -> tuple[pd.DataFrame, str]:
    """Long-format logs of the demo dataset (RouterBench's 11 LLMs), and where they came from."""
    long = settings.shared_datasets / "routerbench_subset" / "long.parquet"
    if long.exists():
        return pd.read_parquet(long), f"RouterBench ({long})"
    from uniroute.synth import write_synthetic_logs

    summary = write_synthetic_logs(work / "synthetic", n_prompts=3000, n_models=10, n_topics=8, seed=0)
    return pd.read_parquet(summary.logs_path), f"synthetic logs ({settings.shared_datasets} not found)"


def drop_into_inbox(frame: pd.DataFrame, path: Path) -> None:
    """Write a file into the inbox the way writers should: as NAME.part, renamed to NAME once complete."""
    partial = path.with_name(path.name + ".part")
    frame.to_parquet(partial, index=False)
    partial.rename(path)


def held_back_model(logs: pd.DataFrame) -> str:
    """The LLM to hold back: the one with the best mean score, so that its arrival visibly changes routing."""
    means = logs.groupby("model")["score"].mean().sort_values(ascending=False)
    return str(means.index[0])


def sql(settings: Settings, statement: str) -> pd.DataFrame:
    from uniroute.store import read_only_query

    return read_only_query(settings.db_path, statement)


def show(title: str, frame: pd.DataFrame) -> None:
    print(f"-- {title}")
    with pd.option_context("display.width", 200, "display.max_columns", 20, "display.max_colwidth", 40):
        print(frame.to_string(index=False) if len(frame) else "(no rows)")


def why_one_model(model: str, tiny: str | None) -> str:
    """The one sentence a user reads when every routed prompt went to one model at the default setting."""
    reason = tiny or ("no cheaper published setting keeps 90% of the expected gain from the cheapest routing to "
                      "the best (docs/decisions/0200-default-setting.md); --budget trades quality for cost")
    return f"every prompt went to {model} at the default setting: {reason}"


def routed_traffic(settings: Settings, logs: pd.DataFrame, gateway: DemoGateway, tiny: str | None,
                   n: int = 300) -> None:
    """Send n test prompts through the gateway as a user would (the OpenAI client, model "uniroute": the default
    setting; each request recorded to the spool), stop it, then drop their outcomes into the inbox: the answering
    LLM's score and cost on the prompt, from the logs. tiny: the build's note when its tuned K is tiny, the likely
    reason for one model taking everything."""
    from uniroute.pipeline.serving.snapshot import current_manifest

    test_ids = set(sql(settings, "select prompt_id from prompt_splits where split = 'test'").prompt_id)
    prompts = logs[logs.prompt_id.isin(test_ids)].drop_duplicates("prompt_id").head(n)
    router_id = str((current_manifest(settings.published_dir) or {}).get("router_id"))
    with heartbeat("waiting for the gateway to serve the new publication"):
        gateway.wait_until_serving(router_id)
    print(f"gateway {gateway.base_url} serves router {router_id}; sending {len(prompts)} test prompts with the "
          f"OpenAI client (model=\"uniroute\", {CONCURRENCY} at a time)", flush=True)
    started = time.monotonic()
    # The batch takes 10 s or more on two shared cores: a count every few seconds (make run's longest silence).
    answered: list[None] = []  # list.append is atomic: the sending threads count without a lock
    with heartbeat(lambda: f"sending: {len(answered)} of {len(prompts)} answered"):
        sent = send_batch(gateway, prompts, answered=lambda: answered.append(None))
    took = time.monotonic() - started
    code = gateway.stop()
    failed = sent[sent.error.notna()]
    if len(failed):
        sys.exit(f"error: {len(failed)} of {len(sent)} requests failed through the gateway, e.g. "
                 f"{failed.error.iloc[0]} (its log: {gateway.log})")
    chosen = sent.model.value_counts()
    print(f"{len(sent):,} answers in {took:.1f} s, 0 failed; answered by: "
          f"{', '.join(f'{m} {c}' for m, c in chosen.items())}")
    print(f"stopped the gateway (exit {code}) and the test backends; spooled decision files: "
          f"{len(list(settings.spool_dir.glob('*.jsonl')))}")
    if len(chosen) == 1:
        print(why_one_model(str(chosen.index[0]), tiny))
    outcomes = sent.merge(logs, on=["prompt_id", "model"])[["decision_id", "score", "cost"]]
    drop_into_inbox(outcomes, settings.inbox_dir / "traffic_outcomes.parquet")
    print(f"{len(outcomes):,} outcomes (the answering LLM's logged score and cost) dropped into the inbox")


def default_setting_of_traffic(settings: Settings) -> str | None:
    """The line saying at which default budget the gateway routed the batch (from its decision records)."""
    found = sql(settings, "select any_value(budget) as budget from routing_decisions "
                          f"where source = 'api' and setting = '{DEFAULT_SETTING}' and budget is not null")
    budget = found.budget.iloc[0] if len(found) else None
    return None if budget is None or pd.isna(budget) else default_setting_line(float(budget))


def wait_for_onboarding(api_url: str, since: float, timeout: float) -> dict:
    """Poll the Prefect API until a run of the onboarding deployment started after `since` completes, saying each
    state it reaches on the way (the trigger, the runner's launch and the run take 20 s: silent, they looked stuck).
    """
    import asyncio

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName

    async def latest() -> list:
        async with get_client() as client:
            return await client.read_flow_runs(
                flow_filter=FlowFilter(name=FlowFilterName(any_=["uniroute-onboard"])), limit=10
            )

    deadline = time.monotonic() + timeout
    said, said_at = None, time.monotonic()
    while time.monotonic() < deadline:
        for run in asyncio.run(latest()):
            if run.created.timestamp() < since - 1 or not run.state:
                continue
            if run.state.is_final():
                return {"flow_run": run.name, "state": run.state.name, "created": str(run.created)}
            # a new state at once; the same one again every few seconds (a run spends 20 s running)
            if run.state.name != said or time.monotonic() - said_at >= EVERY_SECONDS:
                still = "still " if run.state.name == said else ""
                said, said_at = run.state.name, time.monotonic()
                print(f"onboarding run {run.name}: {still}{said.lower()} ({time.time() - since:.1f} s after the "
                      "file was ingested)", flush=True)
        time.sleep(1)
    raise TimeoutError(f"no onboarding run completed within {timeout:.0f} s (Prefect API {api_url})")


def pin_build_embedder(settings: Settings) -> None:
    """make run's minutes: the demo's builds embed with the interactive embedder (UNIROUTE_EMBEDDER), whatever the
    nightly builds' default (UNIROUTE_BUILD_EMBEDDER, settings.py); the flows read it from the environment."""
    os.environ.setdefault("UNIROUTE_BUILD_EMBEDDER", settings.embedder)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.parse_args(argv)
    settings = Settings()
    apply_offline_environment(settings)
    pin_build_embedder(settings)
    fresh_home(settings)
    work = settings.home / "demo-input"
    work.mkdir()
    logs_dir = settings.home / "logs"
    logs_dir.mkdir()

    logs, source = demo_logs(settings, work)
    newcomer = held_back_model(logs)
    settings.inbox_dir.mkdir(parents=True)

    from deployments.serve import prefect_server, server_environment

    # The server takes 10-60 s to answer, depending on the machine's load: say so rather than sit silent.
    print(f"Starting a Prefect server for this run (its log: {logs_dir / 'prefect-server.log'})", flush=True)
    with contextlib.ExitStack() as stack:
        with heartbeat("starting the Prefect server"):
            api_url = stack.enter_context(prefect_server(settings, logs_dir / "prefect-server.log"))
        # Before anything imports Prefect: its settings are read once, and every flow of this run must talk to
        # this server, never to a temporary one Prefect would start on its own.
        os.environ["PREFECT_API_URL"] = api_url
        print(f"Prefect server: {api_url.removesuffix('/api')}")
        from deployments.deployments import ONBOARDING, wait_until_served
        from flows.build import nightly_build
        from flows.ingest import ingest_inbox
        from flows.publish import publish_routing_tables

        say("1. Benchmark logs land in the inbox; the inbox flow ingests them")
        print(f"{len(logs):,} results from {source}; {logs.model.nunique()} LLMs; holding back {newcomer!r}")
        drop_into_inbox(logs[logs.model != newcomer], settings.inbox_dir / "benchmark_logs.parquet")
        for outcome in ingest_inbox():
            print(f"inbox: {outcome['name']} {outcome['status']}")

        say("2. Nightly build (embed on Dask, tune every router kind, serve the one chosen on validation, "
            "evaluate, MLflow)")
        build = nightly_build()
        print(f"router {build['router_id']}: {build['served']}, {len(build['models'])} LLMs, "
              f"{build['reason']}")
        tiny = tiny_table_note(build["kind"], build["k"], build["n_prompts"]["val"])
        if tiny:
            print(tiny)
        show("router kinds compared on validation prompts (training LLMs only; the build serves `chosen`)",
             sql(settings, f"""
            select kind, value, shrinkage, round(val_area, 4) as val_area, round(val_area_se, 4) as se,
                   round(diff_to_default, 4) as diff_to_default, round(diff_se, 4) as diff_se, p_best, chosen
            from router_selection where build_router_id = '{build['router_id']}'"""))
        show("prompts and models", sql(settings, "select split, count(*) as prompts from prompt_splits group by 1"))

        say("3. Publish")
        first = publish_routing_tables()
        print(f"published {first['version']} -> {first['path']}")
        gateway = start_gateway(settings, sorted(logs.model.unique()), logs_dir / "gateway.log")
        stack.callback(gateway.stop)  # whatever happens next, nothing is left running
        print(f"starting the gateway in the background (uniroute gateway, log {gateway.log}) over "
              f"{len(gateway.backends)} local OpenAI-compatible test backends, one per LLM "
              f"({settings.deployments_file})")

        say(f"4. {newcomer!r} answers the validation prompts; its results land in the inbox")
        runner_env = server_environment(settings) | {"PREFECT_API_URL": api_url, "PREFECT_RUNNER_POLL_FREQUENCY": "1"}
        with open(logs_dir / "onboarding-runner.log", "ab") as runner_log:
            runner = subprocess.Popen([sys.executable, "-m", "deployments.runner", "--only", ONBOARDING],
                                      env=runner_env, stdout=runner_log, stderr=subprocess.STDOUT)
        try:
            print("serving the onboarding deployment; waiting for its trigger to be registered", flush=True)
            with heartbeat("waiting for the onboarding deployment and its trigger"):
                wait_until_served(ONBOARDING, triggered=True)  # the deployment and its trigger's automation exist
            val_ids = sql(settings, "select prompt_id from prompt_splits where split = 'val'").prompt_id
            landed = logs[(logs.model == newcomer) & logs.prompt_id.isin(set(val_ids))]
            drop_into_inbox(landed, settings.inbox_dir / f"{newcomer.replace('/', '_')}_validation.parquet")
            since = time.time()
            ingested = ingest_inbox()
            for outcome in ingested:
                print(f"inbox: {outcome['name']} {outcome['status']}; emitted uniroute.results.landed for "
                      f"{', '.join(outcome.get('landed_models') or []) or 'no new model'}")
            onboarding = wait_for_onboarding(api_url, since, timeout=180)
            # The run is named for what it did: "onboarded <model> -> <child router>" (flows/artifacts.py).
            print(f"event -> onboarding run {onboarding['state']} {time.time() - since:.1f} s after the file was "
                  f"ingested: {onboarding['flow_run']}")
        finally:
            runner.terminate()
            runner.wait(timeout=30)

        say("5. Republish and look at the new routing table")
        second = publish_routing_tables()
        print(f"published {second['version']}")

        say("6. Traffic through the gateway: a batch sent with the OpenAI client, its outcomes come back, the "
            "inbox flow ingests both")
        routed_traffic(settings, logs, gateway, tiny)
        ingested = ingest_inbox()
        spooled = [o for o in ingested if o["name"].startswith("decisions-")]  # the spool's files: one line
        if spooled:
            print(f"inbox: {len(spooled)} decision file(s) of the gateway's spool "
                  f"{', '.join(sorted({o['status'] for o in spooled}))}")
        for outcome in ingested:
            if outcome not in spooled:
                print(f"inbox: {outcome['name']} {outcome['status']}")
        print(default_setting_of_traffic(settings) or "the batch was not routed at the default budget")
        # Send what the flows logged and emitted while the server still runs (else: errors at exit).
        from prefect.events.worker import EventsWorker
        from prefect.logging.handlers import APILogWorker

        APILogWorker.drain_all()
        EventsWorker.drain_all()
    if len(sql(settings, "select 1 from current_routing_table limit 1")):
        show("newcomer's share of clusters per budget (current routing table)", sql(settings, f"""
            select budget, count(*) filter (where model = '{newcomer}') as clusters_to_newcomer,
                   count(*) as clusters
            from current_routing_table where grid = 'budget' group by budget order by budget"""))
    else:
        print("-- the champion routes per prompt (LearnedMap or K-NN): no per-cluster routing table to show")
    show("realised quality of the routed batch against what the router expected (realized_quality)",
         sql(settings, """
        select model, cast(sum(n_outcomes) as integer) as outcomes,
               round(sum(realized_score * n_outcomes) / sum(n_outcomes), 3) as realized_score,
               round(sum(expected_score * n_outcomes) / sum(n_outcomes), 3) as expected_score
        from realized_quality group by model order by outcomes desc"""))
    show("pool leaderboard", sql(settings, "select * from pool_leaderboard"))
    show("held-out evaluation of the nightly build (test prompts, whole pool)", sql(settings, """
        select method,
               round(max(value) filter (where metric = 'area'), 4) as area,
               round(max(value) filter (where metric = 'area50'), 4) as area50,
               round(max(value) filter (where metric = 'qnc'), 4) as qnc,
               round(max(value) filter (where metric = 'peak'), 4) as peak
        from router_metrics
        where router_id = (select router_id from routers where origin = 'build' and candidate_of is null
                           order by created_at desc limit 1)
        group by method order by area desc"""))
    plots = sorted(settings.mlflow_artifacts.rglob("deferral_curves.png"), key=lambda p: p.stat().st_mtime)
    if plots:
        print(f"\nDeferral curves of the build: {plots[-1].resolve()}")
    plot = settings.home / "published" / "current"
    print(f"\nState: {settings.home.resolve()}\nPublished tables: {plot.resolve()}")
    print(f"Query it: UNIROUTE_HOME={settings.home} .venv/bin/uniroute sql \"select * from current_routing_table\"")


if __name__ == "__main__":
    main()
