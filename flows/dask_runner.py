"""The Dask task runner the build flow embeds with, and what of the cluster's own logging reaches the flow's log."""

from __future__ import annotations

import logging
import urllib.request

from prefect_dask import DaskTaskRunner

from uniroute.settings import Settings


class _DashboardThatAnswers(logging.Filter):
    """prefect_dask logs the cluster's dashboard link whenever the scheduler has one, even when the page there only
    says "Dask needs bokeh" (a scheduler started without it) or nothing answers: the link is logged only when the
    page is the dashboard."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "Dask dashboard is available at " not in message:
            return True
        return dashboard_answers(message.rsplit(" ", 1)[-1])


def dashboard_answers(url: str, timeout: float = 3.0) -> bool:
    """Whether url serves Dask's dashboard (status 200, not the page asking for bokeh)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status == 200 and b"needs bokeh" not in response.read(4096)
    except (OSError, ValueError):
        return False


_DASHBOARD_FILTER = _DashboardThatAnswers()

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
        runner = DaskTaskRunner(address=settings.dask_address)
    else:
        # A dashboard on a free port (a fixed one may be taken: a warning users cannot act on); the cluster's own
        # INFO lines and shutdown notices stay out of the flow's log.
        runner = DaskTaskRunner(cluster_kwargs={"n_workers": settings.dask_workers, "threads_per_worker": 1,
                                                "processes": True, "dashboard_address": "127.0.0.1:0",
                                                "silence_logs": logging.ERROR})
    if _DASHBOARD_FILTER not in runner.logger.filters:  # every runner shares its class's logger
        runner.logger.addFilter(_DASHBOARD_FILTER)
    return runner


