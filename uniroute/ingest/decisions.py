"""Decision records (JSON lines from the serving spool) into the `decisions` table: one file, one transaction,
idempotent by decision_id. The record's shape is written by uniroute/pipeline/serving/records.py; its marker and version
live here, below both, so the reader and the writer agree on them.

A file is refused whole, in one line naming the file, line and value, when a line is not a record this version can
read (another kind, a newer schema_version, a missing id, model or router, a propensity outside (0, 1]); a record
whose decision_id is already stored is skipped, so a file ingested twice, or two copies of a record, land once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.json as pj

from uniroute import store
from uniroute.ingest.staging import IngestError

RECORD_KIND = "uniroute.decision"  # every record's `record` field: how a decisions file is told by content
RECORD_VERSION = 1  # the newest record schema_version this reader knows
FORMAT_DECISIONS = "decisions-jsonl"
SOURCES = ("cli", "file", "pyfunc", "api")

# Optional fields of a record written in the request path (uniroute/gateway/traces.py): the model that answered
# (null: none did), each attempt, time to first token and total latency (ms), the backend's token counts, the real
# cost at the price in force, why no model answered, and the conversation's hashed key. Absent: null.
ATTEMPT = pa.struct([("model", pa.string()), ("error", pa.string()), ("latency_ms", pa.float64())])
GATEWAY_FIELDS = (
    ("answered_by", pa.string()), ("attempts", pa.list_(ATTEMPT)), ("ttft_ms", pa.float64()),
    ("latency_ms", pa.float64()), ("input_tokens", pa.int64()), ("output_tokens", pa.int64()),
    ("cost", pa.float64()), ("failure", pa.string()), ("conversation", pa.string()),
)

# The record's fields as read (unknown fields of a newer minor writer are ignored).
RECORD_SCHEMA = pa.schema([
    ("record", pa.string()), ("schema_version", pa.int64()), ("decision_id", pa.string()),
    ("decided_at", pa.string()), ("source", pa.string()), ("router_id", pa.string()),
    ("publication_version", pa.string()), ("embedder_id", pa.string()), ("text_hash", pa.string()),
    ("cluster", pa.int64()), ("neighbours", pa.string()), ("centroid_distance", pa.float64()),
    ("model", pa.string()), ("fallbacks", pa.list_(pa.string())),
    ("lam", pa.float64()), ("budget", pa.float64()), ("setting", pa.string()),
    ("expected_score", pa.float64()), ("expected_cost", pa.float64()), ("propensity", pa.float64()),
    ("explored", pa.bool_()), ("embedding", pa.string()), ("embedding_dim", pa.int64()), ("prompt", pa.string()),
    # What happened in the request path (the gateway writes them; every other serving path leaves them out).
    *GATEWAY_FIELDS,
])
REQUIRED = ("decision_id", "decided_at", "source", "router_id", "text_hash", "model", "lam", "propensity")


def first_object_is_decision(first: object) -> bool:
    """Whether the first JSON object of a file is a decision record."""
    return isinstance(first, dict) and first.get("record") == RECORD_KIND


@dataclass(frozen=True)
class DecisionsLoaded:
    rows_read: int
    rows_accepted: int  # new decisions written
    rows_duplicate: int  # records whose decision_id was stored already (or repeated in the file)


def load_decisions(con: store.Connection, path: Path, source_file: str, file_hash: str) -> DecisionsLoaded:
    """Check a decisions file and write its new records, in the caller's transaction; IngestError for a bad file."""
    table = _read(path)
    _check(path, table)
    with store.registered(con, "decisions_staged", table):
        before = int(store.query(con, "decisions_count").iloc[0, 0])
        store.execute(con, "decisions_insert", source_file=source_file, file_hash=file_hash, now=datetime.now())
        after = int(store.query(con, "decisions_count").iloc[0, 0])
    return DecisionsLoaded(table.num_rows, int(after - before), table.num_rows - int(after - before))


def _read(path: Path) -> pa.Table:
    options = pj.ParseOptions(explicit_schema=RECORD_SCHEMA, unexpected_field_behavior="ignore")
    try:
        return pj.read_json(path, parse_options=options)
    except pa.ArrowInvalid as exc:
        raise IngestError(_first_bad_line(path) or f"{path}: not decision records: {str(exc).splitlines()[0]}") \
            from None


def _first_bad_line(path: Path) -> str | None:
    """The first line that is not a JSON object, named (Arrow's parser says what, not where)."""
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                return f"{path}: line {number} is not JSON ({exc.msg}): {line[:80]!r}"
            if not isinstance(record, dict):
                return f"{path}: line {number} is not a JSON object: {line[:80]!r}"
    return None


def _check(path: Path, table: pa.Table) -> None:
    """IngestError naming the first line (1-based, blank lines not counted) and value that cannot be stored."""
    columns = {name: table.column(name).to_pylist() for name in ("record", "schema_version", "source", "propensity",
                                                                 *REQUIRED)}
    for i in range(table.num_rows):
        line = i + 1
        if columns["record"][i] != RECORD_KIND:
            raise IngestError(f"{path}: line {line} is not a decision record (record={columns['record'][i]!r}); "
                              "a decisions file holds decision records only")
        version = columns["schema_version"][i]
        if version is None or not 1 <= version <= RECORD_VERSION:
            raise IngestError(f"{path}: line {line} has record schema_version {version!r}; this uniroute reads "
                              f"versions 1 to {RECORD_VERSION} (upgrade uniroute to ingest it)")
        missing = [name for name in REQUIRED if columns[name][i] in (None, "")]
        if missing:
            raise IngestError(f"{path}: line {line} has no {missing[0]}")
        if columns["source"][i] not in SOURCES:
            raise IngestError(f"{path}: line {line} has source {columns['source'][i]!r}, not one of "
                              f"{', '.join(SOURCES)}")
        p = columns["propensity"][i]
        if not 0.0 < p <= 1.0:
            raise IngestError(f"{path}: line {line} has propensity {p!r}, outside (0, 1]")
