"""Each field of a decision record checked like a benchmark row: its type, its range and what it refers to in the
store (a known router, a model that router routes, a cluster within its K, an embedding of its embedder's size).

FIELD_CHECKS is the one table of field -> check: a new record field (the gateway's answering model, attempts,
latency...) is one more row. A check sees the field's value, the whole record and the store's references, and
returns why the value cannot be stored, or None; the first reason quarantines the record (ingest/decisions.py).
"""

from __future__ import annotations

import base64
import binascii
import math
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

RECORD_KIND = "uniroute.decision"  # every record's `record` field: how a decisions file is told by content
RECORD_VERSION = 1  # the newest record schema_version this reader knows
SOURCES = ("cli", "file", "pyfunc", "api")
MAX_NAME = 256  # ids, model and router names: longer is not a name
# Numbers a record carries are costs, lambdas and distances: far below this; above it sums and products of a
# window overflow to inf, which no reader should have to guard.
MAX_NUMBER = 1e15
EARLIEST = datetime(2000, 1, 1)
# A serving machine's clock may run ahead of the store's by this much; a record decided later is in the future
# (it would sit in every recent window until then).
CLOCK_SKEW = timedelta(minutes=5)
SHA256_HEX = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class RouterRef:
    """What a record may refer to in one stored router version."""

    k: int
    models: frozenset[str]
    embedder_id: str
    dim: int | None  # its centroids' size (None: a kind without centroids)


@dataclass(frozen=True)
class References:
    """The store's routers by id, and the time a record may not be decided after."""

    routers: dict[str, RouterRef]
    latest: datetime  # UTC, naive


Check = Callable[[Any, dict[str, Any], References], str | None]


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _bad_name(value: Any) -> str | None:
    """Why a value is not a clean name (a non-empty string, no control, format or bidi characters), or None."""
    if not isinstance(value, str) or not value.strip():
        return "must be a non-empty string"
    if len(value) > MAX_NAME:
        return f"is {len(value):,} characters long (at most {MAX_NAME})"
    for char in value:
        if unicodedata.category(char) in ("Cc", "Cf", "Cs", "Zl", "Zp"):
            return f"holds the control or direction character U+{ord(char):04X}"
    return None


def _name(value: Any, record: dict[str, Any], refs: References) -> str | None:
    return _bad_name(value)


def _optional_name(value: Any, record: dict[str, Any], refs: References) -> str | None:
    return None if value is None else _bad_name(value)


def _number_in(low: float, high: float, low_open: bool = False, optional: bool = True) -> Check:
    """A check that the value is a finite number in [low, high] ((low, high] when low_open)."""
    shown = f"{'(' if low_open else '['}{low:g}, {high:g}]"

    def check(value: Any, record: dict[str, Any], refs: References) -> str | None:
        if value is None and optional:
            return None
        if not _is_number(value) or not math.isfinite(value):
            return f"must be a finite number in {shown}"
        if value < low or (low_open and value == low) or value > high:
            return f"must lie in {shown}"
        return None

    return check


def _router(record: dict[str, Any], refs: References) -> RouterRef | None:
    router_id = record.get("router_id")
    return refs.routers.get(router_id) if isinstance(router_id, str) else None


def _router_id(value: Any, record: dict[str, Any], refs: References) -> str | None:
    bad = _bad_name(value)
    if bad is not None:
        return bad
    return None if value in refs.routers else "is not a router version in this store"


def _embedder_id(value: Any, record: dict[str, Any], refs: References) -> str | None:
    bad = _optional_name(value, record, refs)
    router = _router(record, refs)
    if bad is None and value is not None and router is not None and value != router.embedder_id:
        return f"is not the router's embedder ({router.embedder_id})"
    return bad


def _decided_at(value: Any, record: dict[str, Any], refs: References) -> str | None:
    at = decided_at_utc(value)
    if at is None:
        return "must be an ISO 8601 time (UTC, or with its offset)"
    if at < EARLIEST or at > refs.latest:
        return f"lies outside {EARLIEST:%Y-%m-%d} .. now (+{CLOCK_SKEW.seconds // 60} min of clock skew)"
    return None


def decided_at_utc(value: Any) -> datetime | None:
    """A record's time as naive UTC (an offset honoured, a naive time taken as UTC), or None if it is not one."""
    if not isinstance(value, str) or len(value) > 64:
        return None
    try:
        at = datetime.fromisoformat(value)
    except ValueError:
        return None
    return at.astimezone(UTC).replace(tzinfo=None) if at.tzinfo is not None else at


def _text_hash(value: Any, record: dict[str, Any], refs: References) -> str | None:
    return None if isinstance(value, str) and SHA256_HEX.fullmatch(value) else "must be 64 lowercase hex digits"


def _cluster(value: Any, record: dict[str, Any], refs: References) -> str | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        return "must be a whole number"
    router = _router(record, refs)
    if router is not None and not 0 <= value < router.k:
        return f"is outside the router's clusters 0..{router.k - 1}"
    return None


def _model(value: Any, record: dict[str, Any], refs: References) -> str | None:
    bad = _bad_name(value)
    router = _router(record, refs)
    if bad is None and router is not None and value not in router.models:
        return "is not a model the router routes"
    return bad


def _fallbacks(value: Any, record: dict[str, Any], refs: References) -> str | None:
    if value is None:
        return None
    if not isinstance(value, list):
        return "must be a list of model names"
    for item in value:
        bad = _model(item, record, refs)
        if bad is not None:
            return f"holds {str(item)[:40]!r}, which {bad}"
    return None


def _flag(value: Any, record: dict[str, Any], refs: References) -> str | None:
    return None if value is None or isinstance(value, bool) else "must be true or false"


def _embedding_dim(value: Any, record: dict[str, Any], refs: References) -> str | None:
    if value is None:
        return "is needed with an embedding" if record.get("embedding") is not None else None
    if not isinstance(value, int) or isinstance(value, bool) or not 0 < value <= 65_536:
        return "must be a whole number in 1..65536"
    router = _router(record, refs)
    if router is not None and router.dim is not None and value != router.dim:
        return f"is not the router's embedding size ({router.dim})"
    return None


def _embedding(value: Any, record: dict[str, Any], refs: References) -> str | None:
    if value is None:
        return None
    if embedding_bytes(value, record.get("embedding_dim")) is None:
        return "must be base64 of embedding_dim finite float16 values"
    return None


def embedding_bytes(value: Any, dim: Any) -> bytes | None:
    """The float16 bytes a record's base64 embedding holds, or None unless they are `dim` finite values."""
    if not isinstance(value, str) or not isinstance(dim, int) or isinstance(dim, bool) or dim <= 0:
        return None
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None
    if len(raw) != 2 * dim or not np.isfinite(np.frombuffer(raw, dtype="<f2")).all():
        return None
    return raw


def _prompt(value: Any, record: dict[str, Any], refs: References) -> str | None:
    return None if value is None or isinstance(value, str) else "must be text"


def _neighbours(value: Any, record: dict[str, Any], refs: References) -> str | None:
    if value is None:
        return None
    return "must be text" if not isinstance(value, str) else None


def _count(value: Any, record: dict[str, Any], refs: References) -> str | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_NUMBER:
        return "must be a whole number >= 0"
    return None


ATTEMPT_FIELDS = {"model", "error", "latency_ms"}


def _attempts(value: Any, record: dict[str, Any], refs: References) -> str | None:
    """Each attempt of the request path: a model name, its error text (null: it answered) and its latency."""
    if value is None:
        return None
    if not isinstance(value, list) or len(value) > 100:
        return "must be a list of at most 100 attempts"
    for attempt in value:
        if not isinstance(attempt, dict) or not set(attempt) <= ATTEMPT_FIELDS:
            return f"holds {_shown(attempt)}, not an attempt ({', '.join(sorted(ATTEMPT_FIELDS))})"
        reason = (_bad_name(attempt.get("model")) or _prompt(attempt.get("error"), record, refs)
                  or _number_in(0.0, MAX_NUMBER)(attempt.get("latency_ms"), record, refs))
        if reason is not None:
            return f"holds an attempt whose field {reason}"
    return None


def _source(value: Any, record: dict[str, Any], refs: References) -> str | None:
    return None if value in SOURCES else f"must be one of {', '.join(SOURCES)}"


def _required(check: Check) -> Check:
    """The check, after refusing a missing value."""
    def required(value: Any, record: dict[str, Any], refs: References) -> str | None:
        return "is missing" if value is None or value == "" else check(value, record, refs)
    return required


# Field -> check, in the order they are tried (router_id first: later checks look the router up). `record` and
# `schema_version` are checked before (ingest/decisions.py): they say whether a line is a record this reader knows.
FIELD_CHECKS: dict[str, Check] = {
    "router_id": _required(_router_id),
    "decision_id": _required(_name),
    "decided_at": _required(_decided_at),
    "source": _required(_source),
    "publication_version": _optional_name,
    "embedder_id": _embedder_id,
    "text_hash": _required(_text_hash),
    "cluster": _cluster,
    "neighbours": _neighbours,
    "centroid_distance": _number_in(0.0, MAX_NUMBER),
    "model": _required(_model),
    "fallbacks": _fallbacks,
    "lam": _required(_number_in(0.0, MAX_NUMBER, optional=False)),
    "budget": _number_in(0.0, MAX_NUMBER),
    "setting": _optional_name,
    "expected_score": _number_in(0.0, 1.0),
    "expected_cost": _number_in(0.0, MAX_NUMBER),
    "propensity": _required(_number_in(0.0, 1.0, low_open=True, optional=False)),
    "explored": _flag,
    "embedding_dim": _embedding_dim,
    "embedding": _embedding,
    "prompt": _prompt,
    # What happened in the request path (the gateway's records; every other serving path leaves them out).
    "answered_by": lambda value, record, refs: None if value is None else _model(value, record, refs),
    "attempts": _attempts,
    "ttft_ms": _number_in(0.0, MAX_NUMBER),
    "latency_ms": _number_in(0.0, MAX_NUMBER),
    "input_tokens": _count,
    "output_tokens": _count,
    "cost": _number_in(0.0, MAX_NUMBER),
    "failure": _prompt,
    "conversation": lambda value, record, refs: None if value is None else _text_hash(value, record, refs),
}


def record_problem(record: dict[str, Any], refs: References) -> str | None:
    """Why a decision record cannot be stored (the first field that fails its check, and its value), or None."""
    for field_name, check in FIELD_CHECKS.items():
        value = record.get(field_name)
        reason = check(value, record, refs)
        if reason is not None:
            shown = "" if field_name in ("embedding", "prompt", "text_hash") else f" ({_shown(value)})"
            return f"{field_name} {reason}{shown}"
    return None


def _shown(value: Any) -> str:
    """A value as quoted in a reason: its repr, escaped and cut short (it may be anything a record holds)."""
    text = ascii(value)
    return text if len(text) <= 80 else text[:77] + "..."
