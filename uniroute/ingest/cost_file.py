"""A file of per-model costs for `uniroute models set-cost --file`: a JSON object (pretty-printed or not) mapping
each model to its cost per query, or to an object with a numeric `cost`; or JSON lines / CSV with columns
`model` and `cost`. Every value is checked like a result's cost (finite, >= 0, at most the ceiling)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from uniroute.ingest.checks import COST_CEILING
from uniroute.ingest.staging import IngestError


def _cost(path: Path, where: str, model: str, value: object) -> float:
    """One model's cost, checked; IngestError naming the file, the entry and the value."""
    if isinstance(value, dict):
        if "cost" not in value:
            raise IngestError(f"{path}: {where} ({json.dumps(model)}) has no `cost` field (fields: "
                              f"{', '.join(map(str, value))}); give a cost per query")
        value = value["cost"]
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise IngestError(f"{path}: {where} ({json.dumps(model)}): cost {json.dumps(value)} is not a number")
    try:
        cost = float(value)
    except ValueError:
        raise IngestError(f"{path}: {where} ({json.dumps(model)}): cost {json.dumps(value)} is not a number") from None
    if not (math.isfinite(cost) and 0 <= cost <= COST_CEILING):
        raise IngestError(f"{path}: {where} ({json.dumps(model)}): cost {value!r} must be a finite number in "
                          f"[0, {COST_CEILING:g}]")
    return cost


def costs_from_file(path: Path) -> dict[str, float]:
    """{model: cost per query} of a cost file (see the module docstring); IngestError in one line otherwise."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise IngestError(f"{path}: cannot read the cost file ({exc})") from exc
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            whole = json.loads(text)
        except json.JSONDecodeError:
            whole = None  # JSON lines: one object per line
        if isinstance(whole, dict) and not {"model", "cost"} <= set(whole):
            if not whole:
                raise IngestError(f"{path}: the cost file names no model")
            return {str(m): _cost(path, f"entry {i}", str(m), v) for i, (m, v) in enumerate(whole.items(), 1)}
        try:
            rows = [json.loads(line) for line in text.splitlines() if line.strip()]
        except json.JSONDecodeError as exc:
            raise IngestError(f"{path}: not a JSON object of costs nor JSON lines ({exc.msg}, line {exc.lineno})") \
                from None
    else:
        try:
            rows = pd.read_csv(path, dtype=str).to_dict("records")
        except (ValueError, pd.errors.ParserError) as exc:
            raise IngestError(f"{path}: not a CSV of costs ({exc})") from None
    out: dict[str, float] = {}
    for number, row in enumerate(rows, start=1):
        if not isinstance(row, dict) or not row.get("model"):
            raise IngestError(f"{path}: row {number} has no `model` (a cost file has columns model and cost)")
        out[str(row["model"])] = _cost(path, f"row {number}", str(row["model"]), row.get("cost"))
    if not out:
        raise IngestError(f"{path}: the cost file names no model")
    return out
