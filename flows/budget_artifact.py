"""The publish flow's artifact of what each budget buys (quality, cost, traffic share per model) and its PNG.

Apart from flows/artifacts.py: the plot needs matplotlib, which the every-minute inbox flow should not import.
"""

from __future__ import annotations

from pathlib import Path

from prefect import get_run_logger
from prefect.artifacts import create_markdown_artifact

from uniroute import store
from uniroute.pipeline.serving.budget_report import budget_plot_path, load_budget_report, write_budget_plot
from uniroute.settings import Settings


def budgets_markdown(markdown: str, png: Path) -> str:
    """The budget table, and where its plot is (an image artifact needs a URL; the PNG is a local file)."""
    return f"{markdown}\n\nPlot: `{png.resolve()}` (any publication: `uniroute report --budgets PNG --publication V`)."


def report_budgets(version: str, settings: Settings) -> Path | None:
    """Artifact of what each budget of a publication buys, and its PNG in the reports folder; None if skipped."""
    try:
        with store.opened(settings.db_path, read_only=True) as con:
            budgets = load_budget_report(con, version)
    except store.StoreError as exc:  # a report never fails a run whose work is done (flows/artifacts.py)
        get_run_logger().warning("budget artifact skipped: %s", exc)
        return None
    png = write_budget_plot(budgets, budget_plot_path(settings.reports_dir, version))
    create_markdown_artifact(budgets_markdown(budgets.markdown(), png), key="uniroute-budgets",
                             description=f"What each budget of {version} buys")
    return png
