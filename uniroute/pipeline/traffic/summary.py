"""A day's traffic in a few lines (the inbox flow's Prefect artifact): decisions and share per model, the spend
expected and realised, the realised quality next to what Psi expected, and the share far from every centroid."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

import pandas as pd

from uniroute import store
from uniroute.frame_output import markdown_table


@dataclass(frozen=True, eq=False)
class TrafficDay:
    day: date
    models: pd.DataFrame  # sql/queries/traffic_day_models.sql
    drift: pd.DataFrame  # sql/queries/traffic_day_drift.sql

    @property
    def decisions(self) -> int:
        return int(self.models.decisions.sum()) if len(self.models) else 0


def traffic_day(con: store.Connection, day: date) -> TrafficDay:
    """The day's traffic as the store has it (a read-only connection is enough)."""
    return TrafficDay(day, store.query(con, "traffic_day_models", day=day), store.query(con, "traffic_day_drift",
                                                                                        day=day))


def traffic_markdown(traffic: TrafficDay) -> str:
    """The day's traffic as Markdown."""
    lines = [f"# Traffic on {traffic.day:%Y-%m-%d} (UTC)", ""]
    if not traffic.decisions:
        return "\n".join([*lines, "No decision was recorded that day (or its spool files are not ingested yet)."])
    m = traffic.models
    outcomes = int(m.outcomes.sum())
    lines.append(f"- **{traffic.decisions:,} decisions** over {len(m)} models; expected spend "
                 f"{m.expected_spend.sum():.4g}")
    if outcomes:
        scored = m[m.outcomes > 0]
        realized = (scored.realized_score * scored.outcomes).sum() / outcomes
        known = scored[scored.expected_score.notna()]  # a kind without clusters has no Psi cell to expect from
        expected = ((known.expected_score * known.outcomes).sum() / known.outcomes.sum()) if len(known) else None
        lines.append(f"- **{outcomes:,} outcomes**: realised score {realized:.3f}"
                     + (f" against {expected:.3f} expected" if expected is not None else ""))
        if m.realized_spend.notna().any():
            lines.append(f"- realised spend {m.realized_spend.sum():.4g} (decisions with an observed cost only)")
    else:
        lines.append("- no outcome yet")
    for row in traffic.drift.itertuples(index=False):
        lines.append(f"- drift: {row.far_share:.1%} of router {row.router_id}'s decisions lie farther from every "
                     f"centroid than 95% of its training prompts")
    return "\n".join([*lines, "", markdown_table(m.round(4))])
