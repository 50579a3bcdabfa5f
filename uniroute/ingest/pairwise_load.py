"""Loading a pairwise file's checked battles into the store, inside the caller's transaction."""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd

from uniroute import store
from uniroute.ingest.formats import staged_file
from uniroute.ingest.pairwise import StagedPairs
from uniroute.ingest.pairwise_checks import checked_pairs
from uniroute.ingest.staging import IngestError

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
    retired_models: tuple[str, ...]
    models: tuple[str, ...]


def load_pairs(con: store.Connection, staged: StagedPairs, source: str, file_hash: str,
               expose: Any = store.registered, now: datetime | None = None) -> PairsWritten:
    """Check staged battles within the file and against the store, then write battles, new prompts and models
    and the quarantine (the file record is written by the caller, in the same transaction). `expose` makes the
    checked tables visible to the SQL (store.registered, or store.copied for a block of a large file)."""
    checked = checked_pairs(staged.rows)
    relations = (("ingest_pair_candidates", checked.candidates), ("ingest_prompts", checked.prompts),
                 ("ingest_models", checked.models), ("ingest_rejects", checked.rejects))
    with contextlib.ExitStack() as stack:
        for name, table in relations:
            stack.enter_context(expose(con, name, table))
        log.info("%s: checking %d battles against the store", source, checked.candidates.num_rows)
        for statement in CHECK_STATEMENTS:
            store.execute(con, statement)
        counts = store.query(con, "ingest_pairs_counts").iloc[0]
        landed = tuple(store.query(con, "ingest_landed_models").model.tolist())
        retired = tuple(store.query(con, "ingest_retired_models").model.tolist())
        given = tuple(store.query(con, "ingest_pairs_given_models").model.tolist())
        now = now or datetime.now()  # one time for every block of a large file
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
        retired_models=retired,
        models=given,
    )


def pairs_frame(path: Path) -> pd.DataFrame:
    """A pairwise file's battles as a frame (prompt_id, prompt, model_a, model_b, preference, benchmark), read and
    checked as ingestion does; for offline evaluation, which cannot quarantine, a bad row is an IngestError."""
    staged = staged_file(path)
    if not isinstance(staged, StagedPairs):
        raise IngestError(f"{path}: not a pairwise file (it reads as {staged.format})")
    checked = checked_pairs(staged.rows)
    if checked.rejects.num_rows:
        first = checked.rejects.slice(0, 1).to_pylist()[0]
        raise IngestError(f"{path}: row {first['row_number']}: {first['reason']} ({checked.rejects.num_rows} bad "
                          "rows in all; `uniroute ingest` quarantines them and keeps the rest)")
    c, prompts, models = checked.candidates, checked.prompts.to_pandas(), checked.models.to_pandas()
    prompt_of = prompts.set_index("pid")
    name = models.set_index("mid")["model"]
    pid = c["pid"].to_numpy()
    return pd.DataFrame({
        "prompt_id": prompt_of.loc[pid, "prompt_id"].to_numpy(),
        "prompt": prompt_of.loc[pid, "text"].to_numpy(),
        "model_a": name.loc[c["aid"].to_numpy()].to_numpy(),
        "model_b": name.loc[c["bid"].to_numpy()].to_numpy(),
        "preference": c["preference"].to_numpy(),
        "benchmark": prompt_of.loc[pid, "benchmark"].to_numpy(),
    })
