"""A stored embedder state is read from a store once per process: the same store answers from memory, another
store holding the same id answers with its own bytes."""

from __future__ import annotations

from pathlib import Path

from uniroute import store
from uniroute.pipeline.pool import registry


def _with_state(db_path: Path, state: bytes) -> None:
    with store.session(db_path, "test") as s:
        s.con.execute("insert into fitted_embedders values ('toy-embedder', ?, now())", [state])


def test_a_state_is_read_once_per_store_and_never_taken_from_another(tmp_path: Path) -> None:
    first, second = tmp_path / "a" / "uniroute.duckdb", tmp_path / "b" / "uniroute.duckdb"
    for path, state in ((first, b"state of a"), (second, b"state of b")):
        path.parent.mkdir()
        _with_state(path, state)
    with store.opened(first, read_only=True) as con:
        assert registry.stored_embedder_state(con, "toy-embedder") == b"state of a"
        assert registry.stored_embedder_state(con, "no-such-embedder") is None
    with store.opened(second, read_only=True) as con:
        assert registry.stored_embedder_state(con, "toy-embedder") == b"state of b"
    with store.session(first, "test") as s:  # only a test rewrites a state: the second read answers from memory
        s.con.execute("update fitted_embedders set state = 'rewritten' where embedder_id = 'toy-embedder'")
    with store.opened(first, read_only=True) as con:
        assert registry.stored_embedder_state(con, "toy-embedder") == b"state of a"
