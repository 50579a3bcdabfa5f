"""The columns the code and the docs read exist in the store: every named statement of sql/queries/ binds on a new
store, every SQL example of docs/operate.md runs, and the snapshot mirror of the user views
(pipeline/serving/user_sql.py) has the store's columns. A renamed or dropped column fails here, not in a user's nightly
run."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest

from uniroute import store
from uniroute.ingest import load, pairwise_load
from uniroute.ingest.checks import checked_rows
from uniroute.ingest.decisions import REJECT_SCHEMA, STAGED_SCHEMA
from uniroute.ingest.pairwise import PAIR_STAGE_SCHEMA
from uniroute.ingest.pairwise_checks import checked_pairs
from uniroute.ingest.staging import STAGE_SCHEMA
from uniroute.pipeline.serving import snapshot
from uniroute.pipeline.serving.user_sql import LATER_PSI_COLUMNS, SNAPSHOT_VIEWS, snapshot_tables

REPO = Path(__file__).resolve().parents[2]
# Relations the code registers from frames before running a statement (store.registered), by their columns.
OUTCOME_COLUMNS = ("row_number bigint, decision_id varchar, score double, cost double, input_tokens bigint, "
                   "output_tokens bigint")
REGISTERED = {
    "prompt_clusters": "prompt_id varchar, cluster integer",  # pipeline/pool/psi_data.py
    "wanted_texts": "pos bigint, text varchar",  # embed/cache.py
    "embedding_wanted": "pos bigint, text_hash varchar",  # staged by sql/queries/embedding_stage_wanted.sql
    "wanted_attribute_hashes": "text_hash varchar",  # embed/annotator.py
    "wanted_hashes": "pos bigint, text_hash varchar",  # pipeline/build/matrices.py: the held rows' vectors
    "assigned": "text_hash varchar, cluster integer",  # pipeline/build/clusters.py: the workers' assignment files
    # A version-1 store's cache table (sql/migrations/002) until store/embeddings.py moves it to Parquet.
    "embeddings_unexported": "text_hash varchar, embedder_id varchar, dim integer, vector float[], "
                             "created_at timestamp",
    "ingest_sample_keys": "key varchar, prompt_id varchar, models varchar[]",  # ingest/merge.py
    "ingest_block_rows": "idx bigint, prompt_id varchar, prompt varchar, split varchar",  # ingest/block_anchors.py
    # ingest/outcomes.py: the checked rows, and the state sql/queries/outcomes_state.sql builds from them
    "outcomes_read": OUTCOME_COLUMNS,  # the file's rows, appended batch by batch (outcomes_read_create)
    "outcomes_batch": OUTCOME_COLUMNS,
    "outcomes_staged": OUTCOME_COLUMNS,
    "outcomes_state": f"{OUTCOME_COLUMNS}, state varchar, stored_score double",
}


def _registered(con: duckdb.DuckDBPyConnection) -> None:
    for name, columns in REGISTERED.items():
        con.execute(f"create temp table {name} ({columns})")
    con.register("decisions_staged", STAGED_SCHEMA.empty_table())  # ingest/decisions.py
    con.register("decision_rejects", REJECT_SCHEMA.empty_table())


def _staged_results(con: duckdb.DuckDBPyConnection) -> None:
    """What ingesting a results file stages: the checks' frames (of an empty file), then its check statements."""
    checked = checked_rows(STAGE_SCHEMA.empty_table())
    for name, table in (("ingest_candidates", checked.candidates), ("ingest_prompts", checked.prompts),
                        ("ingest_models", checked.models), ("ingest_rejects", checked.rejects)):
        con.register(name, table)
    for statement in load.CHECK_STATEMENTS:
        store.execute(con, statement)


def _staged_battles(con: duckdb.DuckDBPyConnection) -> None:
    """What ingesting a file of battles stages, likewise."""
    checked = checked_pairs(PAIR_STAGE_SCHEMA.empty_table())
    for name, table in (("ingest_pair_candidates", checked.candidates), ("ingest_prompts", checked.prompts),
                        ("ingest_models", checked.models), ("ingest_rejects", checked.rejects)):
        con.register(name, table)
    for statement in pairwise_load.CHECK_STATEMENTS:
        store.execute(con, statement)


def _binding_errors(db_path: Path, stage: Callable[[duckdb.DuckDBPyConnection], None]) -> dict[str, str]:
    """{statement: DuckDB's error} for the named statements that do not bind, every $name bound to NULL."""
    errors = {}
    with store.opened(db_path) as con:
        _registered(con)
        stage(con)
        for path in sorted((store.SQL_DIR / "queries").glob("*.sql")):
            text = path.read_text()
            params = {name: None for name in re.findall(r"\$([A-Za-z_]\w*)", text)}
            try:  # EXPLAIN binds every column reference without running the statement
                con.execute(f"explain {text}", params or None)
            except duckdb.Error as exc:
                errors[path.stem] = str(exc).splitlines()[0]
    return errors


def test_every_named_statement_binds_on_a_new_store(db_path):
    """Each statement binds with the staged relations of one of the two ingest paths (the others need none)."""
    results, battles = _binding_errors(db_path, _staged_results), _binding_errors(db_path, _staged_battles)
    unbound = {name: results[name] for name in results.keys() & battles.keys()}
    assert not unbound, unbound


def _operate_examples() -> list[str]:
    text = (REPO / "docs" / "operate.md").read_text()
    examples = re.findall(r'uniroute sql "(select [^"]+)"', text) + re.findall(r'-c "(select [^"]+)"', text)
    examples += re.findall(r"con\.sql\('(select [^']+)'\)", text) + re.findall(r"^D (select .+);$", text, flags=re.M)
    return examples


@pytest.mark.parametrize("sql", _operate_examples())
def test_every_sql_example_of_the_operations_guide_runs(db_path, sql):
    with store.opened(db_path):
        pass
    store.read_only_query(db_path, sql)


def test_the_operations_guide_has_sql_examples():
    assert len(_operate_examples()) >= 8


def _columns(con: duckdb.DuckDBPyConnection, relation: str) -> list[str]:
    return [r[0] for r in con.execute(
        "select column_name from information_schema.columns where table_schema = 'main' and table_name = $name "
        "order by ordinal_position", {"name": relation}).fetchall()]


def _snapshot_like(con: duckdb.DuckDBPyConnection, psi_columns: list[str]) -> snapshot.Snapshot:
    """An empty snapshot shaped as publishing writes one: the store's rows without the keys the folder implies."""
    psi = con.execute("select * exclude (router_id) from psi").df()[psi_columns]
    return snapshot.Snapshot(
        path=Path("V"), manifest={"version": "V", "router_id": "R", "pool": []},
        routes=con.execute("select * exclude (version) from published_routes").df(),
        budgets=con.execute("select * exclude (version) from published_budgets").df(),
        files={snapshot.PSI_FILE: snapshot.frame_bytes(psi, "parquet")},
    )


@pytest.mark.parametrize("later_psi_columns", [True, False], ids=["snapshot", "snapshot-before-psi-columns"])
@pytest.mark.parametrize("view", sorted(SNAPSHOT_VIEWS))
def test_the_snapshot_mirror_has_the_columns_of_the_store_view(db_path, view, later_psi_columns):
    """While a writer holds the store, `uniroute sql` answers these views from the published snapshot."""
    with store.opened(db_path) as con:
        expected = _columns(con, view)
        psi_columns = [c for c in _columns(con, "psi") if c != "router_id"
                       and (later_psi_columns or c not in LATER_PSI_COLUMNS)]
        tables = snapshot_tables(_snapshot_like(con, psi_columns))
    mirrored = store.sandboxed_over(tables, SNAPSHOT_VIEWS, f"select * from {view}", store.Sandbox())
    assert expected and list(mirrored.columns) == expected
