"""A routed batch's decisions as columns (route.decided_columns): what route_batch makes its frame of, what the
one-prompt CLI path prints and records without importing pandas (serving/quick_route.py), and what the gateway
decides and records each request from (uniroute/gateway/live.py)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True, eq=False)
class DecidedColumns:
    """A routed batch before it is a frame: the decisions' columns by name in the frame's order (per-prompt arrays
    and lists; `cluster` the router's (n,) cluster ids, or None for a kind without clusters), and the rest as in
    RoutedBatch. What route_batch makes its frame of, and what the one-prompt CLI path and the gateway print and
    record without a frame: one decision, two ways to hold it."""

    columns: dict[str, Any]
    X: np.ndarray
    propensity: np.ndarray
    explored: np.ndarray
    embedder_id: str
    latency_note: str | None = None

    def plain_columns(self) -> dict[str, Any]:
        """The columns with `cluster` as one int or None per prompt (what a decision record and JSON carry)."""
        return {**self.columns, "cluster": cluster_list(self.columns["cluster"], len(self.X))}

    def records(self, leave_out: Collection[str] = ()) -> list[dict[str, Any]]:
        """The rows as JSON-ready dicts, as frame_output.exact_records gives the frame's rows, pandas not imported."""
        from uniroute.frame_output import column_records

        return column_records({k: v for k, v in self.plain_columns().items() if k not in leave_out})

    def frame(self) -> pd.DataFrame:
        """The decisions as route_batch's frame: one row per prompt, `cluster` nullable Int32."""
        import pandas as pd

        return pd.DataFrame({**self.columns, "cluster": cluster_series(self.columns["cluster"], len(self.X))})


def cluster_series(clusters: np.ndarray | None, n: int) -> pd.Series:
    """n prompts' cluster ids as a nullable Int32 column (all null for a kind without clusters)."""
    import pandas as pd

    if clusters is None:
        return pd.Series(pd.NA, index=range(n), dtype="Int32")
    return pd.Series(clusters.astype(np.int32), dtype="Int32")


def cluster_list(clusters: np.ndarray | None, n: int) -> list[int | None]:
    """n prompts' cluster ids as Python ints, None each for a kind without clusters (cluster_of without pandas)."""
    return [None] * n if clusters is None else clusters.astype(np.int64).tolist()
