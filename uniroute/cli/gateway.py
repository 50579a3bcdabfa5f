"""`uniroute gateway`: the OpenAI-compatible endpoint in the request path (uniroute/gateway/)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from uniroute.cli.app import app, one_line_errors, say, settings_from_env


@app.command()
def gateway(
    deployments: Annotated[
        Path | None, typer.Option(help="LiteLLM model_list YAML: model_name = pool model, litellm_params say how "
                                  "it is called (default: $UNIROUTE_HOME/deployments.yaml).")
    ] = None,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int | None, typer.Option(help="Port to listen on (default: UNIROUTE_GATEWAY_PORT, 4000).")] = None,
) -> None:
    """Serve the OpenAI API: model "uniroute" routes, calls the chosen model through LiteLLM, falls back by the
    routing table and records every request."""
    from uniroute.gateway.launch import GatewayPlaces, open_gateway, serve
    from uniroute.pipeline.serving.calibration import TrafficWindow

    settings = settings_from_env()
    places = GatewayPlaces(
        settings.published_dir, settings.db_path, settings.spool_dir if settings.record_decisions else None,
        settings.inbox_dir, deployments or settings.deployments_file, settings.record_prompts,
        TrafficWindow(settings.budget_traffic_days, settings.budget_traffic_min_decisions,
                      settings.budget_traffic_max_decisions))
    with one_line_errors(OSError):
        running = open_gateway(places)
    serve(running, host, settings.gateway_port if port is None else port, say)
