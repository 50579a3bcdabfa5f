"""Nightly build flow: ingest the inbox, embed new prompts on Dask, build and version a router."""

from __future__ import annotations

import numpy as np
from prefect import flow, get_run_logger, task
from prefect_dask import DaskTaskRunner

from uniroute import build, embed, ingest
from uniroute.settings import Settings, apply_offline_environment


@task(name="embed-batch")
def embed_batch(texts: list[str], embedder_name: str) -> np.ndarray:
    """Embed one batch on a Dask worker (the embedder is loaded once per worker)."""
    return embed.encode_batch(texts, embedder_name)


def dask_task_runner(settings: Settings) -> DaskTaskRunner:
    """A local Dask cluster by default; UNIROUTE_DASK_ADDRESS points at an existing scheduler."""
    if settings.dask_address:
        return DaskTaskRunner(address=settings.dask_address)
    return DaskTaskRunner(
        cluster_kwargs={
            "n_workers": settings.dask_workers,
            "threads_per_worker": 1,
            "processes": True,
            "dashboard_address": None,
        }
    )


@flow(name="uniroute-embed-and-build")
def embed_and_build(embedder_name: str, seed: int) -> dict:
    """Runs with a Dask task runner chosen at run time (see nightly_build)."""
    settings = Settings()

    def on_dask(batches: list[list[str]]) -> list[np.ndarray]:
        return [f.result() for f in embed_batch.map(batches, embedder_name)]

    # TF-IDF is fitted on this build's training prompts, so it embeds in the main process.
    map_batches = None if embedder_name == "tfidf" else on_dask
    result = build.run_build(
        settings.db_path, embedder_name, seed, settings.mlflow_uri, settings.mlflow_artifacts, map_batches=map_batches
    )
    return result.as_dict()


@flow(name="uniroute-nightly-build")
def nightly_build() -> dict:
    """Ingest the inbox, then build a router version on Dask and log it to MLflow."""
    settings = Settings()
    apply_offline_environment(settings)
    logger = get_run_logger()
    for summary in ingest.process_inbox(settings.db_path, settings.inbox_dir):
        logger.info(summary.line())
    runner_flow = embed_and_build.with_options(task_runner=dask_task_runner(settings))
    result = runner_flow(settings.embedder, settings.seed)
    logger.info(
        "router %s K=%s promoted=%s: %s", result["router_id"], result["k"], result["promoted"], result["reason"]
    )
    return result
