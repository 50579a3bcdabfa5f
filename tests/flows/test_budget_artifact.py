"""The publish flow's budget artifact, through a real Prefect API on the hand-checked store."""

from __future__ import annotations

import asyncio
from pathlib import Path

from prefect import flow

from flows.budget_artifact import report_budgets
from tests.sql.views_store import write_views_store
from uniroute.settings import Settings


def _artifact(key: str):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    async def read():
        async with get_client() as client:
            return await client.read_latest_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key])))

    return asyncio.run(read())


def test_a_publication_leaves_its_budget_table_and_png(prefect_harness, settings: Settings):
    write_views_store(settings.db_path)

    @flow
    def publish_like() -> str:
        return str(report_budgets("V2", settings))

    png = publish_like()
    assert png == str(settings.reports_dir / "budgets_V2.png")
    assert Path(png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    [artifact] = _artifact("uniroute-budgets")
    assert artifact.data.startswith("# What each budget buys: V2")
    assert "| 0.5 | 0.9 | 0.625 | 0.25 | 0.75 |" in artifact.data
    assert f"Plot: `{settings.reports_dir.resolve() / 'budgets_V2.png'}`" in artifact.data
