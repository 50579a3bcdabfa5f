"""Which traffic file a path holds, by content: decision records (the serving spool's JSON lines) or outcomes
(CSV, JSON lines or Parquet with decision_id and score), or neither (a benchmark log: ingest/formats.py)."""

from __future__ import annotations

import contextlib
import csv
import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from uniroute.ingest.decisions import FORMAT_DECISIONS, first_object_is_decision
from uniroute.ingest.outcomes import FORMAT_OUTCOMES, looks_like_outcomes

HEAD_BYTES = 64 * 1024  # enough for a CSV header, and for most first JSON lines
# A first JSON line longer than the head (a decision record with a long prompt recorded) is read whole, up to this.
FIRST_LINE_BYTES = 64 * 1024 * 1024


def traffic_format(path: Path) -> str | None:
    """FORMAT_DECISIONS, FORMAT_OUTCOMES, or None for anything else (unreadable files too: their reader says why)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(HEAD_BYTES)
            if head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{") and b"\n" not in head:
                head += handle.readline(FIRST_LINE_BYTES)
    except OSError:
        return None
    if head.startswith(b"PAR1"):
        with contextlib.suppress(pa.ArrowException, OSError):
            return FORMAT_OUTCOMES if looks_like_outcomes(pq.ParquetFile(path).schema_arrow.names) else None
        return None
    try:
        text = head.decode("utf-8-sig", errors="strict" if len(head) < HEAD_BYTES else "ignore").lstrip()
    except UnicodeDecodeError:
        return None
    first_line = text.split("\n", 1)[0]
    if text.startswith("{"):
        try:
            first = json.loads(first_line)
        except (json.JSONDecodeError, RecursionError):
            return None  # broken or hostile JSON: the benchmark-log readers report it, naming the line
        if first_object_is_decision(first):
            return FORMAT_DECISIONS
        return FORMAT_OUTCOMES if isinstance(first, dict) and looks_like_outcomes(list(first)) else None
    try:
        header = next(csv.reader(io.StringIO(first_line)), [])
    except csv.Error:
        return None
    return FORMAT_OUTCOMES if looks_like_outcomes([h.strip() for h in header]) else None
