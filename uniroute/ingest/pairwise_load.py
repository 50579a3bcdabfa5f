"""Loading a pairwise file's checked battles into the store, inside the caller's transaction."""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass
from datetime import datetime

from uniroute import store
from uniroute.ingest.pairwise import StagedPairs
from uniroute.ingest.pairwise_checks import checked_pairs

log = logging.getLogger(__name__)

# The SQL that checks a file's coded battles against the store, in order (each builds one temp table or view).
# ingest_prompt_state and ingest_model_state are shared with the pointwise load.
CHECK_STATEMENTS = (
    "ingest_prompt_state",
    "ingest_model_state",
    "ingest_pairs_check_store",
    "ingest_pairs_accepted",
    "ingest_pairs_accepted_prompts",
    "ingest_pairs_accepted_models",
    "ingest_pairs_quarantined",
)


@dataclass(frozen=True)
class PairsWritten:
    """What writing a pairwise file did (the fields of an IngestSummary)."""

    rows_accepted: int
    rows_duplicate: int
    rows_quarantined: int
    new_prompts: int
    new_models: int
    landed_models: tuple[str, ...]
    models: tuple[str, ...]


def load_pairs(con: store.Connection, staged: StagedPairs, source: str, file_hash: str) -> PairsWritten:
    """Check staged battles within the file and against the store, then write battles, new prompts and models
    and the quarantine (the file record is written by the caller, in the same transaction)."""
    checked = checked_pairs(staged.rows)
    relations = (("ingest_pair_candidates", checked.candidates), ("ingest_prompts", checked.prompts),
                 ("ingest_models", checked.models), ("ingest_rejects", checked.rejects))
    with contextlib.ExitStack() as stack:
        for name, table in relations:
            stack.enter_context(store.registered(con, name, table))
        log.info("%s: checking %d battles against the store", source, checked.candidates.num_rows)
        for statement in CHECK_STATEMENTS:
            store.execute(con, statement)
        counts = store.query(con, "ingest_pairs_counts").iloc[0]
        landed = tuple(store.query(con, "ingest_landed_models").model.tolist())
        given = tuple(store.query(con, "ingest_pairs_given_models").model.tolist())
        now = datetime.now()
        write = {"source_file": source, "now": now}
        store.execute(con, "ingest_insert_models", now=now)
        store.execute(con, "ingest_insert_prompts", **write)
        store.execute(con, "ingest_pairs_insert", file_hash=file_hash, **write)
        store.execute(con, "ingest_insert_quarantine", file_hash=file_hash, **write)
    return PairsWritten(
        rows_accepted=int(counts.rows_accepted),
        rows_duplicate=checked.duplicates + int(counts.rows_stored),
        rows_quarantined=int(counts.rows_quarantined),
        new_prompts=int(counts.new_prompts),
        new_models=int(counts.new_models),
        landed_models=landed,
        models=given,
    )
