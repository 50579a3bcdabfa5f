"""Nightly build flow: reconcile, ingest the inbox, embed new prompts on Dask, build and version a router."""

from __future__ import annotations

import logging
from pathlib import Path

from distributed import worker_client
from prefect import flow, get_run_logger, task
from prefect_dask import DaskTaskRunner

from flows.common import flow_settings, library_log_in_run, reconcile_store
from flows.report import build_run_name, rename_run, report_build, started
from uniroute import embed, ingest, store
from uniroute.pipeline import build, build_data
from uniroute.settings import Settings


@task(name="embed-new-prompts")
def embed_new_prompts(db_path: str, embedder_name: str, cache_dir: str, wait_seconds: float) -> int:
    """Embed the uncached prompts in batches on the Dask cluster's workers; returns the prompts looked up."""
    # worker_client secedes this task from its worker's thread pool while the encode tasks it submits run, and
    # rejoins after: with prefect_dask's get_dask_client (a plain new Client) the task kept its thread while it
    # waited, so a cluster with one worker thread in all deadlocked here, holding the store's writer lock.
    with worker_client() as client, store.session(db_path, "embed", inputs=embedder_name,
                                                   wait_seconds=wait_seconds, atomic=False) as s:
        embedder = embed.make_embedder(embedder_name, progress=False, cache_dir=Path(cache_dir))
        return len(embed.embed_cached(s.con, build_data.prompt_texts(s.con), embedder, client=client))

# The in-process scheduler and the nannies log every start, connection and stop at INFO, and those lines reach
# the console through the root handler Prefect installs: LocalCluster's silence_logs does not cover them. On a
# loaded machine a nanny also warns that its worker took over 4 s to stop before it kills it at shutdown: routine
# for a local cluster that is going away, so the nanny speaks only on errors.
for _name in ("distributed", "distributed.scheduler", "distributed.core", "distributed.http.proxy",
              "distributed.worker"):
    logging.getLogger(_name).setLevel(logging.WARNING)
logging.getLogger("distributed.nanny").setLevel(logging.ERROR)


def dask_task_runner(settings: Settings) -> DaskTaskRunner:
    """A local Dask cluster by default; UNIROUTE_DASK_ADDRESS points at an existing scheduler."""
    if settings.dask_address:
        return DaskTaskRunner(address=settings.dask_address)
    # A dashboard on a free port (a fixed one may be taken: a warning users cannot act on); the cluster's own
    # INFO lines and shutdown notices stay out of the flow's log.
    return DaskTaskRunner(cluster_kwargs={"n_workers": settings.dask_workers, "threads_per_worker": 1,
                                          "processes": True, "dashboard_address": "127.0.0.1:0",
                                          "silence_logs": logging.ERROR})


@flow(name="uniroute-embed")
def embed_on_dask(db_path: str, embedder_name: str, cache_dir: str, wait_seconds: float) -> int:
    """Runs with the Dask task runner chosen at run time (see nightly_build)."""
    return embed_new_prompts.submit(db_path, embedder_name, cache_dir, wait_seconds).result()


@flow(name="uniroute-nightly-build", flow_run_name=started("build"))
def nightly_build() -> dict:
    """Reconcile, ingest the inbox, embed new prompts on Dask, then build a router version (MLflow follows): every
    router kind in UNIROUTE_BUILD_KINDS (default all) is tuned, and the one chosen on validation is served."""
    with library_log_in_run():
        settings = flow_settings()
        logger = get_run_logger()
        reconcile_store(settings)
        for outcome in ingest.process_inbox(settings.db_path, settings.inbox_dir,
                                            settle_seconds=settings.inbox_settle_seconds, on_wait=logger.info):
            logger.info("inbox %s: %s", outcome.name, outcome.status)
        # TF-IDF is fitted on this build's training prompts inside the build; every other embedder embeds ahead.
        on_dask = 0
        if settings.embedder != "tfidf":
            on_dask = embed_on_dask.with_options(task_runner=dask_task_runner(settings))(
                str(settings.db_path), settings.embedder, str(settings.cache_dir), settings.store_wait_seconds
            )
        kinds = settings.build_kinds.split(",") if settings.build_kinds.strip() else None
        inputs = f"embedder={settings.embedder} seed={settings.seed}" + (
            f" kinds={settings.build_kinds}" if kinds else "")
        with store.session(settings.db_path, "build", inputs=inputs, wait_seconds=settings.store_wait_seconds,
                           on_wait=logger.info) as s:
            result = build.run_build(s.con, settings.embedder, settings.seed, cache_dir=settings.cache_dir, kinds=kinds)
            s.detail = result.line()
        logger.info(result.line())
        logger.info(result.selection)
        compared = result.candidates_table().drop(columns=["build_router_id"], errors="ignore")
        logger.info("router kinds compared:\n%s", compared.to_string(index=False))
        reconcile_store(settings)
        report_build(result, settings)
        rename_run(build_run_name(result))
        return {**result.as_dict(), "prompts_embedded_on_dask": on_dask}
