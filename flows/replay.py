"""Replay flow: re-route logged traffic with a stored router version (uniroute replay) and leave the result as
Prefect artifacts: the Markdown report and the per-model table."""

from __future__ import annotations

from datetime import datetime

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact, create_table_artifact

from flows.common import flow_context, flow_settings, library_log_in_run
from uniroute import operations
from uniroute.pipeline.traffic.replay import ReplaySetting, ReplayWindow


@flow(name="uniroute-replay")
def replay_traffic(last: int | None = None, since: datetime | None = None, router: str = "champion",
                   without: tuple[str, ...] = (), with_models: tuple[str, ...] = (), lam: float | None = None,
                   budget: float | None = None, max_cost: float | None = None) -> dict:
    """What the window's logged traffic would have cost and scored with `router` (champion, challenger or an id)."""
    with library_log_in_run():
        settings = flow_settings()
        done = operations.replay(flow_context(settings), ReplayWindow(last, since), router, without=without,
                                 with_models=with_models, setting=ReplaySetting(lam, budget, max_cost))
        get_run_logger().info(done.line())
        create_markdown_artifact(done.markdown(), key="uniroute-replay", description=done.line())
        create_table_artifact(done.result["models"], key="uniroute-replay-models",
                              description=f"{done.result['window']} replayed with {done.result['router_id']}")
        return done.as_dict()
