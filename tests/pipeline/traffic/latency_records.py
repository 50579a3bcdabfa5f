"""Decision records of the request path written by hand: each call's model, error and latency, as the gateway
records them (sql/schema/011_traffic.sql `attempts`), for the latency views and the latency cap."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from uniroute import store


def record_calls(db_path: Path, calls: list[tuple[str, float, str | None]], cluster: int | None = 0,
                 router_id: str = "r-001", prefix: str = "d") -> None:
    """One decision per call (model, latency in seconds, error or None), answered by the model unless it failed,
    decided now (inside any traffic window)."""
    now = datetime.now(UTC).replace(tzinfo=None)
    with store.session(db_path, "test") as s:
        for i, (model, seconds, error) in enumerate(calls):
            s.con.execute(
                "insert into decisions (decision_id, schema_version, decided_at, source, router_id, text_hash, "
                "cluster, model, lam, propensity, explored, answered_by, attempts, ttft_ms, latency_ms, "
                "source_file, file_hash, ingested_at) values (?, 3, ?, 'api', ?, 'h', ?, ?, 0.0, 1.0, false, ?, "
                "[{'model': ?, 'error': ?, 'latency_ms': ?}], ?, ?, 'f', 'x', ?)",
                [f"{prefix}{i}", now, router_id, cluster, model, None if error else model, model, error,
                 seconds * 1000, None if error else seconds * 500, seconds * 1000, now])
