"""Nightly build flow: ingest the inbox, embed new prompts on Dask, build and version a router."""

from __future__ import annotations

from pathlib import Path

from prefect import flow, get_run_logger, task
from prefect_dask import DaskTaskRunner, get_dask_client

from uniroute import embed, ingest
from uniroute.pipeline import build, build_data
from uniroute.settings import Settings, apply_offline_environment


@task(name="embed-new-prompts")
def embed_new_prompts(db_path: str, texts: list[str], embedder_name: str, cache_dir: str) -> int:
    """Embed the uncached prompts in batches on the Dask cluster's workers; returns the prompts looked up."""
    with get_dask_client() as client:
        embedder = embed.make_embedder(embedder_name, progress=False, cache_dir=Path(cache_dir))
        return len(embed.embed_cached(db_path, texts, embedder, client=client))


def dask_task_runner(settings: Settings) -> DaskTaskRunner:
    """A local Dask cluster by default; UNIROUTE_DASK_ADDRESS points at an existing scheduler."""
    if settings.dask_address:
        return DaskTaskRunner(address=settings.dask_address)
    return DaskTaskRunner(cluster_kwargs={"n_workers": settings.dask_workers, "threads_per_worker": 1,
                                          "processes": True, "dashboard_address": None})


@flow(name="uniroute-embed")
def embed_on_dask(db_path: str, embedder_name: str, cache_dir: str) -> int:
    """Runs with the Dask task runner chosen at run time (see nightly_build)."""
    return embed_new_prompts.submit(db_path, build_data.prompt_texts(db_path), embedder_name, cache_dir).result()


@flow(name="uniroute-nightly-build")
def nightly_build() -> dict:
    """Ingest the inbox, embed new prompts on Dask, then build a router version and log it to MLflow."""
    settings = Settings()
    apply_offline_environment(settings)
    logger = get_run_logger()
    for outcome in ingest.process_inbox(settings.db_path, settings.inbox_dir):
        logger.info("inbox %s: %s", outcome.name, outcome.status)
    # TF-IDF is fitted on this build's training prompts inside the build, so only MiniLM embeds ahead.
    on_dask = 0
    if settings.embedder != "tfidf":
        on_dask = embed_on_dask.with_options(task_runner=dask_task_runner(settings))(
            str(settings.db_path), settings.embedder, str(settings.cache_dir)
        )
    result = build.run_build(settings.db_path, settings.embedder, settings.seed, settings.mlflow_uri,
                             settings.mlflow_artifacts)
    logger.info(result.line())
    return {**result.as_dict(), "prompts_embedded_on_dask": on_dask}
