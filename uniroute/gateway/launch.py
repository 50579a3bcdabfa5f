"""Starting a gateway: the deployments read, the published router loaded, LiteLLM's Router built, the spool opened,
one line on the deployments' coverage, then uvicorn until stopped (the spool's open file finished on the way out)."""

from __future__ import annotations

import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from uniroute.gateway.deployments import litellm_router, read_deployments
from uniroute.gateway.endpoint import Gateway, gateway_app
from uniroute.gateway.live import LiveRouter
from uniroute.pipeline.serving.calibration import TrafficWindow
from uniroute.pipeline.serving.route import RoutingSource
from uniroute.pipeline.serving.spool import DecisionSpool, finish_on_stop

SPOOL_SECONDS = 10.0  # a gateway's spool file is finished (ingestible) at the latest this long after it opened


@dataclass(frozen=True)
class GatewayPlaces:
    """Where a gateway reads and writes: the published router, the store (prices, calibration), the spool, the
    inbox (posted outcomes), and its deployments file."""

    published_dir: Path
    db_path: Path
    spool_dir: Path | None  # None: decisions not recorded
    inbox_dir: Path | None
    deployments: Path
    keep_prompt: bool = False
    window: TrafficWindow = TrafficWindow()


def open_gateway(places: GatewayPlaces, embedder_of: Callable[[RoutingSource], Any] | None = None,
                 spool_seconds: float = SPOOL_SECONDS) -> Gateway:
    """A gateway ready to serve (its router watcher not started yet)."""
    deployments = read_deployments(places.deployments)
    live = LiveRouter(places.published_dir, places.db_path, embedder_of, places.window)
    spool = None if places.spool_dir is None else DecisionSpool(places.spool_dir, max_seconds=spool_seconds,
                                                                 timer=True)
    return Gateway(live, deployments, litellm_router(deployments), spool, places.inbox_dir, places.keep_prompt)


def serve(gateway: Gateway, host: str, port: int, say: Callable[[str], None] = print) -> None:
    """Serve until interrupted: the router watcher runs meanwhile; the spool's file is finished at the end."""
    import uvicorn

    # uvicorn stops gracefully on SIGTERM, then raises the signal again with the handler it found: under the
    # default one the process would die there, before the `finally` below (`make stop` lost the last seconds of
    # records). It finds this one instead: the spool's open file finished (finish_on_stop), then a clean exit.
    signal.signal(signal.SIGTERM, _exit_quietly)
    # A switch of router is told like the start: a line for the operator, not a warning in the log.
    gateway.live.on_switch = lambda loaded: say(gateway.switch_line(loaded))
    say(gateway.coverage())
    say(f"gateway: router {gateway.live.loaded.source.router_id} on http://{host}:{port}/v1 (model \"uniroute\")")
    gateway.live.start()
    if gateway.spool is not None:
        finish_on_stop(gateway.spool)
    try:
        uvicorn.run(gateway_app(gateway), host=host, port=port, log_level="warning", access_log=False)
    finally:
        gateway.live.stop()
        if gateway.spool is not None:
            gateway.spool.close()


def _exit_quietly(signum: int, frame: object) -> None:
    raise SystemExit(0)
