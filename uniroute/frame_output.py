"""How a result frame is printed: an aligned table, JSON records, CSV or a Markdown table (the CLI prints them,
the flows' reports show Markdown tables)."""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # imported where a frame is printed: `route --json` of one prompt prints columns, no frame
    import pandas as pd

FORMATS = ("table", "json", "csv", "markdown")


def _cell(value: Any) -> str:
    """One Markdown cell: empty for missing values, six significant digits for floats, no pipes or newlines."""
    import pandas as pd

    if isinstance(value, list | tuple | np.ndarray):
        return "[" + ", ".join(_cell(v) for v in value) + "]"
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NaT:
        return ""
    if isinstance(value, pd.Timestamp) and value == value.normalize():
        return value.date().isoformat()  # a DATE column (pandas reads it as a midnight timestamp)
    text = format(value, ".6g") if isinstance(value, float | np.floating) else str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_table(frame: pd.DataFrame) -> str:
    """A GitHub-flavoured Markdown table of the frame; numeric columns right-aligned."""
    import pandas as pd

    columns = [str(c) for c in frame.columns]
    align = ["---:" if pd.api.types.is_numeric_dtype(frame[c]) and not pd.api.types.is_bool_dtype(frame[c])
             else "---" for c in frame.columns]
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines)


def _plain(value: Any) -> Any:
    """A cell as a JSON value: missing -> None, NumPy scalars -> Python, lists and dicts element-wise."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | np.ndarray):
        return [_plain(v) for v in value]
    pd = sys.modules.get("pandas")  # no pandas imported: no value can be its NA, NaT or Timestamp
    if value is None or (pd is not None and (value is pd.NA or value is pd.NaT)) or (
            isinstance(value, float | np.floating) and math.isnan(value)):
        return None
    if isinstance(value, np.generic):
        return value.item()
    if pd is not None and isinstance(value, pd.Timestamp):
        return value.isoformat()
    return value


def exact_records(frame: pd.DataFrame) -> list[dict]:
    """The frame's rows as JSON-ready dicts whose floats round-trip exactly (pandas' to_json keeps 10 digits,
    too few for a reader to recompute an argmin from printed terms)."""
    return [{str(k): _plain(v) for k, v in row.items()} for row in frame.to_dict(orient="records")]


def column_records(columns: Mapping[str, Sequence[Any]]) -> list[dict]:
    """exact_records of the frame these columns (name -> one value per row) would make, without making it: the
    one-prompt `route --json` prints its decision so, pandas never imported."""
    names = list(columns)
    values = [columns[name] for name in names]
    rows = len(values[0]) if values else 0
    return [{str(name): _plain(column[i]) for name, column in zip(names, values, strict=True)} for i in range(rows)]


def render(frame: pd.DataFrame, fmt: str) -> str:
    """The frame as text in one of FORMATS (CSV keeps its trailing newline)."""
    import pandas as pd

    if fmt == "json":
        return frame.to_json(orient="records", date_format="iso")
    if fmt == "csv":
        return frame.to_csv(index=False)
    if fmt == "markdown":
        return markdown_table(frame)
    if fmt != "table":
        raise ValueError(f"unknown format {fmt!r}: use one of {', '.join(FORMATS)}")
    if not len(frame):
        return "(no rows)"
    with pd.option_context("display.max_rows", 200, "display.max_columns", 50, "display.width", 200):
        return frame.to_string(index=False)
