"""What the gateway writes about each request: the decision record of the serving path (pipeline/serving/records.py)
plus what happened in the request path (the model that answered, each attempt, time to first token, total latency,
the backend's token counts, the real cost at the price in force, a failure and the conversation it belongs to);
and an outcome posted to the gateway, as an outcomes file in the inbox (the format ingest/outcomes.py reads)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from uniroute.embed import text_hash
from uniroute.gateway.calls import Attempt
from uniroute.gateway.live import Loaded
from uniroute.pipeline.serving.decided import DecidedColumns
from uniroute.pipeline.serving.records import Served, decision_records

SOURCE = "api"  # the decisions table's serving path of a request through the gateway (the HTTP API)


@dataclass(frozen=True)
class Happened:
    """What a request's calls came to: who answered (None: nobody), the attempts, timings, tokens, cost, failure."""

    answered_by: str | None
    attempts: Sequence[Attempt]
    ttft_ms: float | None
    latency_ms: float
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: float | None = None
    failure: str | None = None  # why nobody answered (every candidate failed, or the cap left none)
    conversation: str | None = None  # the conversation's key, hashed


def conversation_hash(key: str | None) -> str | None:
    """A conversation key as recorded: its sha256 (a user id or session name never lands in the store)."""
    return None if key is None else text_hash(key)


def gateway_record(loaded: Loaded, decided: DecidedColumns, text: str | None, happened: Happened) -> dict[str, Any]:
    """The decision record of one routed request (its prompt only when text is given: the user opted in), from
    the decision's columns: the record route_batch's frame gives, no frame made."""
    source = loaded.source
    served = Served(SOURCE, source.router_id, decided.embedder_id, source.publication_version)
    record = decision_records(decided.plain_columns(), decided.X, source.router, served,
                              texts=None if text is None else [text], propensity=decided.propensity,
                              explore=decided.explored)[0]
    record.update({
        "answered_by": happened.answered_by,
        "attempts": [a.as_record() for a in happened.attempts],
        "ttft_ms": None if happened.ttft_ms is None else round(happened.ttft_ms, 3),
        "latency_ms": round(happened.latency_ms, 3),
        "input_tokens": happened.input_tokens,
        "output_tokens": happened.output_tokens,
        "cost": happened.cost,
        "failure": happened.failure,
        "conversation": happened.conversation,
    })
    return record


def write_outcome(inbox_dir: Path, decision_id: str, score: float, extra: dict[str, Any] | None = None) -> Path:
    """Drop one outcome into the inbox as a JSON-lines outcomes file (written as .part, then renamed); its path."""
    inbox_dir = Path(inbox_dir)
    inbox_dir.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    final = inbox_dir / f"outcomes-gateway-{stamp}-{uuid.uuid4().hex[:12]}.jsonl"
    part = final.with_name(final.name + ".part")
    row = {"decision_id": decision_id, "score": float(score), **(extra or {})}
    with open(part, "xb") as handle:
        handle.write(orjson.dumps(row) + b"\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.rename(part, final)
    return final
