"""Nightly build flow: reconcile, ingest the inbox, embed new prompts on Dask, build and version a router."""

from __future__ import annotations

import time

from distributed import worker_client
from prefect import flow, get_run_logger, task

from flows.artifacts import build_run_name, rename_run, report_build, started
from flows.common import flow_context, flow_settings, library_log_in_run, reconcile_store
from flows.dask_runner import dask_task_runner
from uniroute import operations
from uniroute.progress import EVERY_SECONDS
from uniroute.settings import Settings


@task(name="embed-new-prompts")
def embed_new_prompts(settings: Settings, embedder: str) -> int:
    """Embed the uncached prompts in batches on the Dask cluster's workers; returns the prompts looked up."""
    # worker_client secedes this task from its worker's thread pool while the encode tasks it submits run, and
    # rejoins after: with prefect_dask's get_dask_client (a plain new Client) the task kept its thread while it
    # waited, so a cluster with one worker thread in all deadlocked here, holding the store's writer lock.
    # The task runs in a worker process: the library's progress lines (preparing the embedder, partitions written so
    # far, rate, time left) reach the console and this task run's log from there as from the flow's own process.
    with library_log_in_run(), worker_client() as client:
        return operations.embed_new_prompts(flow_context(settings), embedder, client=client, progress=True).prompts


@flow(name="uniroute-embed")
def embed_on_dask(settings: Settings, embedder: str) -> int:
    """Runs with the Dask task runner chosen at run time (see nightly_build)."""
    future = embed_new_prompts.submit(settings, embedder)
    # Until the task runs in a worker (a new worker process imports the stack first: 10-15 s on a loaded
    # machine) nothing else speaks; once it runs, the library's own progress lines take over.
    started = time.monotonic()
    future.wait(timeout=EVERY_SECONDS)
    while not (future.state.is_running() or future.state.is_final()):
        get_run_logger().info("embed task waiting for a Dask worker (%.0f s)", time.monotonic() - started)
        future.wait(timeout=EVERY_SECONDS)
    return future.result()


@flow(name="uniroute-nightly-build", flow_run_name=started("build"))
def nightly_build() -> dict:
    """Reconcile, ingest the inbox, embed new prompts on Dask, then build a router version (MLflow follows): every
    router kind in UNIROUTE_BUILD_KINDS (default all) is tuned, and the one chosen on validation is served."""
    with library_log_in_run():
        settings = flow_settings()
        logger = get_run_logger()
        reconcile_store(settings)
        ctx = flow_context(settings)
        for outcome in operations.inbox(ctx, onboard_landed=False).outcomes:
            logger.info("inbox %s: %s", outcome.name, outcome.status)
        # Inputs decided once, before anything runs: a bad name fails the flow in one line.
        embedder = settings.build_embedder_name  # UNIROUTE_BUILD_EMBEDDER, else UNIROUTE_EMBEDDER (settings.py)
        inputs = operations.build_inputs(embedder, settings.seed, settings.build_kinds)
        on_dask = 0
        if operations.embeds_ahead(inputs):  # TF-IDF is fitted on this build's training prompts, inside the build
            # A TaskRunner of Dask futures, which Prefect's invariant annotation does not accept as of PrefectFuture.
            runner = dask_task_runner(settings)
            on_dask = embed_on_dask.with_options(task_runner=runner)(settings, embedder)  # type: ignore[arg-type]
        # The build itself runs here; with an external scheduler its K-means refit (a large build) runs there.
        result = operations.build(ctx, embedder, settings.seed, settings.build_kinds,
                                  dask_address=settings.dask_address, progress=True)
        logger.info(result.line())
        logger.info(result.selection)
        compared = result.candidates_table().drop(columns=["build_router_id"], errors="ignore")
        logger.info("router kinds compared:\n%s", compared.to_string(index=False))
        report_build(result, settings)
        rename_run(build_run_name(result))
        return {**result.as_dict(), "prompts_embedded_on_dask": on_dask}
