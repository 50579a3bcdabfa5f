"""Decision records (JSON lines from the serving spool) into the `decisions` table: one file, one transaction,
idempotent by decision_id. The record's shape is written by uniroute/pipeline/serving/records.py; its marker,
version and field checks live below both (ingest/decision_checks.py), so the reader and the writer agree on them.

A record is checked like a benchmark row (decision_checks.FIELD_CHECKS): a line that is not JSON, not a record, or
whose fields fail their checks is quarantined in `decision_quarantine` with its reason, and the file's good records
load. A file is refused whole, in one line, only when none of its lines is a decision record (a benchmark log
dropped in the spool is not training data) or a record has a newer schema_version than this reader knows. A record
whose decision_id is already stored is skipped, so a file ingested twice, or two copies of a record, land once; a
second record with the same id and other content is quarantined.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pandas as pd
import pyarrow as pa

from uniroute import store
from uniroute.ingest.decision_checks import (
    CLOCK_SKEW,
    RECORD_KIND,
    RECORD_VERSION,
    SOURCES,
    References,
    RouterRef,
    decided_at_utc,
    embedding_bytes,
    record_problem,
)
from uniroute.ingest.outcomes import matched_pending
from uniroute.ingest.staging import IngestError

__all__ = ["FORMAT_DECISIONS", "RECORD_KIND", "RECORD_VERSION", "SOURCES", "DecisionsLoaded", "load_decisions",
           "first_object_is_decision"]

FORMAT_DECISIONS = "decisions-jsonl"
RAW_SHOWN = 200  # characters of a quarantined line kept (never its embedding, prompt or text hash)
PRIVATE_FIELDS = ("embedding", "prompt", "text_hash")  # what `uniroute sql` must not read of a routed prompt
_PRIVATE_VALUES = re.compile(r'"(embedding|prompt|text_hash)"\s*:\s*"(?:[^"\\]|\\.)*"?')

# Optional fields of a record written in the request path (uniroute/gateway/traces.py): the model that answered
# (null: none did), each attempt, time to first token and total latency (ms), the backend's token counts, the real
# cost at the price in force, why no model answered, and the conversation's hashed key. Absent: null.
ATTEMPT = pa.struct([("model", pa.string()), ("error", pa.string()), ("latency_ms", pa.float64())])
GATEWAY_FIELDS = (
    ("answered_by", pa.string()), ("attempts", pa.list_(ATTEMPT)), ("ttft_ms", pa.float64()),
    ("latency_ms", pa.float64()), ("input_tokens", pa.int64()), ("output_tokens", pa.int64()),
    ("cost", pa.float64()), ("failure", pa.string()), ("conversation", pa.string()),
)

# The staged records as the insert reads them (sql/queries/decisions_insert.sql): checked and normalised values.
STAGED_SCHEMA = pa.schema([
    ("line_number", pa.int64()), ("schema_version", pa.int64()), ("decision_id", pa.string()),
    ("decided_at", pa.timestamp("us")), ("source", pa.string()), ("router_id", pa.string()),
    ("publication_version", pa.string()), ("embedder_id", pa.string()), ("text_hash", pa.string()),
    ("cluster", pa.int64()), ("neighbours", pa.string()), ("centroid_distance", pa.float64()),
    ("model", pa.string()), ("fallbacks", pa.list_(pa.string())),
    ("lam", pa.float64()), ("budget", pa.float64()), ("setting", pa.string()),
    ("expected_score", pa.float64()), ("expected_cost", pa.float64()), ("propensity", pa.float64()),
    ("explored", pa.bool_()), ("embedding", pa.binary()), ("embedding_dim", pa.int64()), ("prompt", pa.string()),
    # What happened in the request path (the gateway writes them; every other serving path leaves them out).
    *GATEWAY_FIELDS,
])
REJECT_SCHEMA = pa.schema([("line_number", pa.int64()), ("decision_id", pa.string()), ("reason", pa.string()),
                           ("raw", pa.string())])


def first_object_is_decision(first: object) -> bool:
    """Whether the first JSON object of a file is a decision record."""
    return isinstance(first, dict) and first.get("record") == RECORD_KIND


@dataclass(frozen=True)
class DecisionsLoaded:
    rows_read: int
    rows_accepted: int  # new decisions written
    rows_duplicate: int  # records whose decision_id was stored already (or repeated in the file)
    rows_quarantined: int = 0  # lines that are not a storable record, in decision_quarantine with the reason
    first_problem: str | None = None  # "line N: reason" of the first quarantined line


def load_decisions(con: store.Connection, path: Path, source_file: str, file_hash: str) -> DecisionsLoaded:
    """Check a decisions file and write its good records and its quarantine, in the caller's transaction;
    IngestError when no line is a decision record or one is of a newer schema version."""
    refs = references(con)
    good, rejects, read = _checked(path, refs)
    now = datetime.now()
    staged = pa.Table.from_pylist(good, schema=STAGED_SCHEMA)
    with store.registered(con, "decisions_staged", staged):
        conflicts = store.query(con, "decisions_conflicts")
        rejects += [{"line_number": int(r.line_number), "decision_id": r.decision_id, "raw": None,
                     "reason": "decision_id is stored already with other content (the stored record stands)"}
                    for r in conflicts.itertuples(index=False)]
        rejects.sort(key=lambda r: r["line_number"])
        before = int(store.query(con, "decisions_count").iloc[0, 0])
        store.execute(con, "decisions_insert", source_file=source_file, file_hash=file_hash, now=now)
        after = int(store.query(con, "decisions_count").iloc[0, 0])
    if after > before:
        matched_pending(con, now)  # outcomes that arrived before these decisions land with them
    if rejects:
        with store.registered(con, "decision_rejects", pa.Table.from_pylist(rejects, schema=REJECT_SCHEMA)):
            store.execute(con, "decisions_quarantine_insert", path=source_file, file_hash=file_hash, now=now)
    first = f"line {rejects[0]['line_number']}: {rejects[0]['reason']}" if rejects else None
    return DecisionsLoaded(read, after - before, read - len(rejects) - (after - before), len(rejects), first)


def references(con: store.Connection) -> References:
    """The store's router versions as records may refer to them, and the latest time a record may be decided."""
    rows = store.query(con, "decision_routers").to_dict("records")
    routers = {r["router_id"]: RouterRef(int(r["k"]), frozenset(r["models"]), str(r["embedder_id"]),
                                         None if pd.isna(r["dim"]) else int(r["dim"])) for r in rows}
    return References(routers, datetime.now(UTC).replace(tzinfo=None) + CLOCK_SKEW)


def _lines(path: Path) -> list[tuple[int, bytes]]:
    """The file's non-blank lines with their 1-based numbers, split on "\\n" only (a U+2028 inside a JSON string
    is part of its line, and a line may be of any length: a long prompt recorded)."""
    with open(path, "rb") as handle:
        data = handle.read()
    data = data.removeprefix(b"\xef\xbb\xbf")
    return [(n, line) for n, line in enumerate(data.split(b"\n"), start=1) if line.strip()]


def _checked(path: Path, refs: References) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
    """(staged good records, quarantined lines, lines read); IngestError for a file this reader must not take."""
    good: list[dict[str, Any]] = []
    rejects: list[dict[str, Any]] = []
    seen: dict[str, tuple[int, bytes]] = {}
    lines = _lines(path)
    records = 0
    for number, line in lines:
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            rejects.append(_reject(number, None, f"not JSON ({str(exc).split(':', 1)[0]})", line))
            continue
        if not isinstance(record, dict) or record.get("record") != RECORD_KIND:
            rejects.append(_reject(number, None, f"not a decision record (record={_kind(record)})", line))
            continue
        records += 1
        version = record.get("schema_version")
        if isinstance(version, int) and not isinstance(version, bool) and version > RECORD_VERSION:
            raise IngestError(f"{path}: line {number} has record schema_version {version!r}; this uniroute reads "
                              f"versions 1 to {RECORD_VERSION} (upgrade uniroute to ingest it)")
        problem = (None if isinstance(version, int) and not isinstance(version, bool) and version >= 1
                   else f"schema_version must be a whole number in 1..{RECORD_VERSION}")
        problem = problem or record_problem(record, refs)
        decision_id = record.get("decision_id") if isinstance(record.get("decision_id"), str) else None
        if problem is None and decision_id in seen:
            first_line, first_content = seen[decision_id]
            if first_content == line.strip():
                good.append(_staged(number, record))  # an exact copy: the insert keeps one
                continue
            problem = f"decision_id repeats line {first_line}'s with other content (the first one stands)"
        if problem is not None:
            rejects.append(_reject(number, decision_id, problem, line))
            continue
        if decision_id is not None:  # a record without a usable id failed its checks above
            seen[decision_id] = (number, line.strip())
        good.append(_staged(number, record))
    if lines and not records:
        raise IngestError(f"{path}: no line is a decision record (record={RECORD_KIND!r}): the spool and a "
                          f"decisions file take decision records only (a benchmark log goes to the inbox); "
                          f"line {lines[0][0]}: {rejects[0]['reason']}")
    return good, rejects, len(lines)


def _kind(record: object) -> str:
    kind = record.get("record") if isinstance(record, dict) else type(record).__name__
    return ascii(kind)[:40]


def _staged(number: int, record: dict[str, Any]) -> dict[str, Any]:
    """A checked record as STAGED_SCHEMA's row: its time in UTC, its embedding decoded."""
    row: dict[str, Any] = {name: record.get(name) for name in STAGED_SCHEMA.names}
    row["line_number"] = number
    row["decided_at"] = decided_at_utc(record["decided_at"])
    row["embedding"] = (None if record.get("embedding") is None
                        else embedding_bytes(record["embedding"], record.get("embedding_dim")))
    for name in ("lam", "budget", "centroid_distance", "expected_score", "expected_cost", "propensity", "ttft_ms",
                 "latency_ms", "cost"):
        row[name] = None if row[name] is None else float(row[name])
    return row


def _reject(number: int, decision_id: str | None, reason: str, line: bytes) -> dict[str, Any]:
    """A quarantined line: its reason and its start, without the embedding, prompt or hash it may hold."""
    raw = _PRIVATE_VALUES.sub(r'"\1":"(left out)"', line.decode("utf-8", errors="replace"))  # a torn line too
    try:
        parsed = orjson.loads(line)
    except orjson.JSONDecodeError:
        parsed = None
    if isinstance(parsed, dict):
        parsed = {k: v for k, v in parsed.items() if k not in PRIVATE_FIELDS}
        raw = orjson.dumps(parsed, default=str).decode()
    return {"line_number": number, "decision_id": decision_id, "reason": reason, "raw": raw[:RAW_SHOWN]}
