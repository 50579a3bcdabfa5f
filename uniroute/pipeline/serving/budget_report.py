"""What each budget of a publication buys: expected quality, cost and each model's traffic share, as a table and
a PNG. `uniroute report --budgets` prints and draws it; the publish flow leaves it as an artifact."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import matplotlib
import pandas as pd

# A bare Figure draws with Agg and never touches pyplot's global state or a GUI backend (flow runs, servers).
from matplotlib.figure import Figure

from uniroute import store
from uniroute.frame_output import markdown_table
from uniroute.store import StoreError

PER_PROMPT_NOTE = ("the router routes per prompt (LearnedMap or K-NN): it publishes no per-cluster routes, so no "
                   "traffic share per model")


class BudgetReportError(StoreError):
    """No publication to report on, or not the one asked for."""


@dataclass(frozen=True)
class BudgetReport:
    """One publication's budget grid: `frame` has one row per (budget, model) as sql/queries/budget_buys.sql."""

    version: str
    router_id: str
    frame: pd.DataFrame

    def table(self) -> pd.DataFrame:
        """One row per budget: expected score and cost, then one traffic-share column per pool model."""
        head = self.frame.drop_duplicates("budget")[["budget", "expected_score", "expected_cost"]]
        shares = self.frame[self.frame.model.isin(self.routed_models())]
        if shares.empty:
            return head.reset_index(drop=True)
        wide = shares.pivot(index="budget", columns="model", values="traffic_share").reset_index()
        wide.columns = ["budget", *[f"share {m}" for m in wide.columns[1:]]]
        return head.merge(wide, on="budget").reset_index(drop=True)

    def routed_models(self) -> list[str]:
        """Pool models with traffic at some budget (the others would be a column of zeros each)."""
        shares = self.frame.dropna(subset=["model"])
        return sorted(shares.loc[shares.traffic_share > 0, "model"].unique())

    def unrouted_models(self) -> list[str]:
        """Pool models no budget sends traffic to."""
        return sorted(set(self.frame.model.dropna()) - set(self.routed_models()))

    @property
    def calibration(self) -> str:
        """The prompt mix the budgets were calibrated on (traffic window or validation prompts)."""
        known = self.frame["calibration"].dropna() if "calibration" in self.frame.columns else pd.Series(dtype=str)
        return str(known.iloc[0]) if len(known) else "validation prompts"

    def markdown(self) -> str:
        shown = self.table().round(3)
        lines = [f"# What each budget buys: {self.version}", "",
                 f"Router {self.router_id}. Budget: the most a prompt may cost on average, as a fraction of the "
                 f"pool's most expensive model. Expected score and cost on the {self.calibration} (the mix the "
                 "budgets were calibrated on); share: the fraction of traffic each model gets.", "",
                 markdown_table(shown)]
        if self.frame["model"].isna().all():
            lines += ["", f"Note: {PER_PROMPT_NOTE}."]
        elif self.unrouted_models():
            lines += ["", f"No traffic at any budget: {', '.join(self.unrouted_models())}."]
        return "\n".join(lines)


def load_budget_report(con: store.Connection, version: str | None = None) -> BudgetReport:
    """The budget grid of `version`, or of the newest publication."""
    newest = store.query(con, "latest_publication")
    if version is None:
        if newest.empty:
            raise BudgetReportError("the store has no publication yet: run `uniroute publish` first")
        version = str(newest.version.iloc[0])
    known = store.query(con, "publication_versions").version.tolist()
    if version not in known:
        raise BudgetReportError(f"no publication {version!r} in the store (it has: {', '.join(known) or 'none'})")
    frame = store.query(con, "budget_buys", version=version)
    router_id = str(frame.router_id.iloc[0]) if len(frame) else "?"
    return BudgetReport(version, router_id, frame.drop(columns=["router_id"]))


def write_budget_plot(report: BudgetReport, path: Path) -> Path:
    """Top: expected score and cost per budget. Bottom: stacked traffic share per model at each budget."""
    table = report.table()
    shares = [c for c in table.columns if c.startswith("share ")]
    fig = Figure(figsize=(7.5, 6.5))
    top, bottom = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [1, 1.3]})
    x = table["budget"].to_numpy()
    top.plot(x, table["expected_score"], marker="o", label="expected score")
    top.plot(x, table["expected_cost"], marker="s", label="expected cost (of the priciest model)")
    top.plot(x, x, linestyle=":", color="grey", label="budget")
    top.set(ylabel="validation", ylim=(0, 1.05), title=f"What each budget buys: {report.version}")
    top.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    width = 0.8 * (min(x[1:] - x[:-1]) if len(x) > 1 else 0.1)
    bottom_of = pd.Series(0.0, index=table.index)
    colours = matplotlib.colormaps["tab20"]  # 20 distinct colours: tab10's repeat in an 11-model pool
    for i, column in enumerate(shares):
        bottom.bar(x, table[column], width=width, bottom=bottom_of, label=column.removeprefix("share "),
                   color=colours(i % 20))
        bottom_of += table[column].fillna(0.0)
    if not shares:
        bottom.text(0.5, 0.5, PER_PROMPT_NOTE, ha="center", va="center", wrap=True, fontsize=8,
                    transform=bottom.transAxes)
    bottom.set(xlabel="budget (fraction of the most expensive model's cost)", ylabel="traffic share", ylim=(0, 1))
    if shares:
        bottom.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    return path


def budget_plot_path(reports_dir: Path, version: str) -> Path:
    """Where a publication's budget plot goes: one file per version, so older ones stay comparable."""
    return reports_dir / f"budgets_{version}.png"
