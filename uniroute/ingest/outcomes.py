"""Outcomes: what happened after a routed decision (a judge's score, a user's thumbs, a test), as CSV, JSON lines or
Parquet with the columns `decision_id`, `score` in [0, 1] and optionally `cost`, `input_tokens`, `output_tokens`.

One file, one transaction, in the caller's session. The whole file is refused, in one line naming the file, row
and value, for a missing id, a score that is not a number in [0, 1] (NaN included), a negative or non-finite cost,
token counts that are not whole numbers >= 0, one id given two different scores, or a file over MAX_OUTCOME_BYTES.
Against the store: an outcome repeating a stored one is skipped (so a file ingested twice changes nothing); a
stored decision given another score is quarantined with the reason; an outcome whose decision is not stored yet
(sent before the spool was ingested) waits in pending_outcomes and lands when its decision does, within
OUTCOME_WAIT_DAYS.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from uniroute import store
from uniroute.ingest.staging import IngestError

FORMAT_OUTCOMES = "outcomes"
OUTCOME_REQUIRED = ("decision_id", "score")
OUTCOME_OPTIONAL = ("cost", "input_tokens", "output_tokens")
BATCH_ROWS = 50_000  # rows read and checked at a time: some 50 MB of Python objects at the widest
# Outcomes are ~60 bytes a row: 512 MiB is some eight million, more than a file should carry in one transaction.
MAX_OUTCOME_BYTES = 512 * 1024 * 1024
# How long an outcome waits for its decision: a serving process finishes its spool file within a minute, the inbox
# runs every few minutes; a decision later than a week is not coming (a wrong id), and is not matched any more.
OUTCOME_WAIT_DAYS = 7.0


# Columns only a benchmark log has: a file with decision_id and score but none of these is outcomes, whatever else it
# carries (the model that answered, a note).
BENCHMARK_ONLY = ("prompt_id", "prompt", "question", "question_id")


def looks_like_outcomes(columns: list[str]) -> bool:
    """Whether a file's columns (or first object's keys) are those of outcomes."""
    names = set(columns)
    return (set(OUTCOME_REQUIRED) <= names and "record" not in names
            and not names.intersection(BENCHMARK_ONLY))


@dataclass(frozen=True)
class OutcomesLoaded:
    rows_read: int
    rows_accepted: int
    rows_duplicate: int  # repeated in the file or already stored with the same score
    rows_quarantined: int
    first_problem: str | None
    rows_waiting: int = 0  # for decisions not stored yet: in pending_outcomes until they land


def check_size(path: Path, size: int) -> None:
    """IngestError for an outcomes file too large for one transaction (before it is read or hashed)."""
    if size > MAX_OUTCOME_BYTES:
        raise IngestError(f"{path}: an outcomes file of {size / 2**20:,.0f} MiB, over the limit of "
                          f"{MAX_OUTCOME_BYTES / 2**20:,.0f} MiB: split it into smaller files")


def load_outcomes(con: store.Connection, path: Path, source_file: str, file_hash: str,
                  batch_rows: int | None = None) -> OutcomesLoaded:
    """Check an outcomes file and write what it adds, in the caller's transaction; IngestError for a bad file.

    Read and checked batch_rows at a time into a DuckDB temp table (the file is never held whole in Python: a
    10^6-row JSON lines file read whole peaked at 11x its size); the file's own agreement (one score per id) and
    the rest are decided in SQL over that table."""
    store.execute(con, "outcomes_read_create")
    for raw in _batches(path, batch_rows or BATCH_ROWS):
        with store.registered(con, "outcomes_batch", checked_outcomes(path, raw)):
            store.execute(con, "outcomes_read_append")
    clash = store.query(con, "outcomes_read_clash")
    if len(clash):
        given = ", ".join(f"row {r}: {s:g}" for r, s in zip(clash.row_number, clash.score, strict=True))
        raise IngestError(f"{path}: decision_id {clash.decision_id.iloc[0]!r} is given different scores ({given}); "
                          "keep one")
    rows_read = int(store.query_row(con, "outcomes_read_count")[0])  # type: ignore[index]  # a count: one row
    store.execute(con, "outcomes_read_staged")  # exact repeats (same score) dropped: the clash check refused the rest
    store.execute(con, "outcomes_state")
    counts = store.query(con, "outcomes_counts").iloc[0]
    first = store.query(con, "outcomes_first_problem")
    now = datetime.now()
    for statement in ("outcomes_insert", "outcomes_quarantine", "outcomes_pending_insert"):
        store.execute(con, statement, source_file=source_file, file_hash=file_hash, now=now)
    new, quarantined, waiting = int(counts.new), int(counts.quarantined), int(counts.waiting)
    return OutcomesLoaded(rows_read, new, rows_read - new - quarantined - waiting, quarantined,
                          None if first.empty else f"row {first.row_number.iloc[0]}: {first.reason.iloc[0]}",
                          waiting)


def matched_pending(con: store.Connection, now: datetime) -> None:
    """Land the outcomes that waited for decisions now stored (in the caller's transaction, after decisions)."""
    store.execute(con, "outcomes_match_pending", since=now - timedelta(days=OUTCOME_WAIT_DAYS), now=now)


def _batches(path: Path, batch_rows: int) -> Iterator[pd.DataFrame]:
    """The file's rows as text-or-number columns, with their 1-based row numbers (CSV data rows, JSON lines), at
    most batch_rows at a time; each batch has the required columns (None where its rows lack them)."""
    for frame in _raw_batches(path, batch_rows):
        for name in OUTCOME_REQUIRED:
            if name not in frame.columns:
                frame[name] = None
        yield frame


def _raw_batches(path: Path, batch_rows: int) -> Iterator[pd.DataFrame]:
    with open(path, "rb") as handle:
        head = handle.read(4)
    if head == b"PAR1":
        start = 1
        for batch in pq.ParquetFile(path).iter_batches(batch_size=batch_rows):
            frame = batch.to_pandas()
            frame.insert(0, "row_number", np.arange(start, start + len(frame)))
            start += len(frame)
            yield frame
        return
    if _first_character(path) == b"{":
        yield from _json_lines(path, batch_rows)
        return
    start = 1
    for frame in pd.read_csv(path, dtype=object, keep_default_na=False, encoding="utf-8-sig", chunksize=batch_rows):
        frame.insert(0, "row_number", np.arange(start, start + len(frame)))
        start += len(frame)
        yield frame


def _first_character(path: Path) -> bytes:
    """The file's first byte that is not a byte-order mark nor white space (b"" for a blank file)."""
    with open(path, "rb") as handle:
        rest = handle.read(3)
        rest = rest[3:] if rest.startswith(b"\xef\xbb\xbf") else rest
        while True:
            stripped = rest.lstrip()
            if stripped:
                return stripped[:1]
            rest = handle.read(64 * 1024)
            if not rest:
                return b""


def _json_lines(path: Path, batch_rows: int) -> Iterator[pd.DataFrame]:
    rows: list[dict] = []
    numbers: list[int] = []
    yielded = False
    with open(path, "rb") as handle:
        # Bytes split at "\n" only: str.splitlines would also split at a U+2028 inside a JSON string
        for number, raw in enumerate(handle, start=1):
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise IngestError(f"{path}: line {number} is not UTF-8 ({exc.reason} at byte {exc.start})") from None
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                line = line.rstrip("\n")
                raise IngestError(f"{path}: line {number} is not JSON ({exc.msg}): {line[:80]!r}") from None
            if not isinstance(row, dict):
                raise IngestError(f"{path}: line {number} is not a JSON object: {line.rstrip(chr(10))[:80]!r}")
            rows.append(row)
            numbers.append(number)
            if len(rows) == batch_rows:
                yield _frame(rows, numbers)
                rows, numbers, yielded = [], [], True
    if rows or not yielded:
        yield _frame(rows, numbers)


def _frame(rows: list[dict], numbers: list[int]) -> pd.DataFrame:
    frame = pd.DataFrame(rows)
    frame.insert(0, "row_number", np.asarray(numbers, dtype=np.int64))
    return frame


def checked_outcomes(path: Path, raw: pd.DataFrame) -> pd.DataFrame:
    """A batch's rows as (row_number, decision_id, score, cost, input_tokens, output_tokens); IngestError naming
    the first bad row and value."""
    out = pd.DataFrame({"row_number": raw["row_number"].astype(np.int64)})
    ids = raw["decision_id"]
    blank = ids.map(lambda v: v is None or (isinstance(v, float) and math.isnan(v)) or not str(v).strip())
    _refuse(path, raw, blank, "decision_id", "has no decision_id")
    out["decision_id"] = ids.map(lambda v: str(v).strip())
    out["score"] = _numbers(path, raw, "score", "score must be a number in [0, 1]", lambda x: (x >= 0) & (x <= 1))
    if "cost" in raw.columns:
        out["cost"] = _numbers(path, raw, "cost", "cost must be a finite number >= 0", lambda x: x >= 0,
                               optional=True)
    else:
        out["cost"] = np.nan
    for name in ("input_tokens", "output_tokens"):
        if name in raw.columns:
            out[name] = _numbers(path, raw, name, f"{name} must be a whole number >= 0",
                                 lambda x: (x >= 0) & (np.floor(x) == x), optional=True).astype("Int64")
        else:
            out[name] = pd.array([pd.NA] * len(out), dtype="Int64")
    return out  # one id given two scores is refused over the whole file (load_outcomes: outcomes_read_clash)


def _numbers(path: Path, raw: pd.DataFrame, column: str, rule: str, valid, optional: bool = False) -> pd.Series:
    """A column as floats; IngestError naming the first row whose value is not a number obeying `valid`."""
    values = raw[column]
    given = values.map(lambda v: not (v is None or v == "" or (isinstance(v, float) and math.isnan(v))))
    numbers = pd.to_numeric(values.where(given, np.nan).map(_number_or_nan), errors="coerce").astype(np.float64)
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(numbers) & valid(numbers)
    bad = ~ok & (given if optional else True)
    _refuse(path, raw, bad, column, rule)
    return numbers.where(given, np.nan)


def _number_or_nan(value: object) -> float:
    if isinstance(value, bool):
        return math.nan  # true/false is not a score; a judge's thumbs are given as 1 or 0
    try:
        return float(value)  # type: ignore[arg-type]  # any JSON value: what float refuses is caught below
    except (TypeError, ValueError):
        return math.nan


def _refuse(path: Path, raw: pd.DataFrame, bad: pd.Series, column: str, rule: str) -> None:
    if bool(np.asarray(bad, dtype=bool).any()):
        i = int(np.argmax(np.asarray(bad, dtype=bool)))
        row, value = raw["row_number"].iloc[i], raw[column].iloc[i]
        raise IngestError(f"{path}: row {row}: {rule}, not {value!r}" if column != "decision_id" or value not in
                          (None, "") else f"{path}: row {row} {rule}")
