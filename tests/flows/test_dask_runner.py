"""The flow's Dask runner logs the dashboard link only when the page there is the dashboard (flows/dask_runner.py)."""

from __future__ import annotations

import http.server
import logging
import threading

from distributed import LocalCluster

from deployments.serve import free_port
from flows.dask_runner import _DASHBOARD_FILTER, dashboard_answers, dask_task_runner
from uniroute.settings import Settings


class _NeedsBokeh(http.server.BaseHTTPRequestHandler):
    """What a scheduler without bokeh serves at its dashboard address."""

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        body = b"Dask needs bokeh>=3.1.0 for the dashboard."
        self.send_response(200)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def _record(url: str) -> logging.LogRecord:
    return logging.LogRecord("prefect.task_runner.dask", logging.INFO, __file__, 1,
                             f"The Dask dashboard is available at {url}", None, None)


def test_a_link_is_logged_only_when_the_dashboard_answers():
    server = http.server.HTTPServer(("127.0.0.1", 0), _NeedsBokeh)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        assert not dashboard_answers(f"http://127.0.0.1:{server.server_port}/status")
        assert not _DASHBOARD_FILTER.filter(_record(f"http://127.0.0.1:{server.server_port}/status"))
    finally:
        server.shutdown()
    assert not dashboard_answers(f"http://127.0.0.1:{free_port()}/status")  # nothing listens there
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address="127.0.0.1:0") as cluster:
        link = f"http://127.0.0.1:{cluster.scheduler.http_server.port}/status"  # where it listens
        # bokeh is a dependency: the real page answers. Its first rendering took over the 3 s default on a machine at
        # load 10 (a -n 3 suite run beside other jobs), so the first look waits longer; the filter's look after it
        # keeps the default.
        assert dashboard_answers(link, timeout=60)
        assert _DASHBOARD_FILTER.filter(_record(link))
    other = logging.LogRecord("x", logging.INFO, __file__, 1, "Connecting to existing Dask cluster", None, None)
    assert _DASHBOARD_FILTER.filter(other)


def test_the_runner_carries_the_filter(tmp_path):
    runner = dask_task_runner(Settings(home=tmp_path, dask_address="tcp://127.0.0.1:1"))
    assert _DASHBOARD_FILTER in runner.logger.filters
    dask_task_runner(Settings(home=tmp_path))
    assert runner.logger.filters.count(_DASHBOARD_FILTER) == 1
