"""RouterBench prompts split over rows of different files: found by sample_id and merged into one prompt."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

from uniroute import store
from uniroute.ingest.routerbench import ROUTERBENCH_KEY_KIND

log = logging.getLogger(__name__)

@dataclass(frozen=True)
class _Merge:
    """A staged prompt that is the rest of a stored prompt split across files (RouterBench)."""

    staged_prompt_id: str
    stored_prompt_id: str
    stored_text: str
    staged_is_main: bool  # the staged rows have more results: the stored part moves to the staged id


def _sample_keys(rows: pa.Table) -> pa.Table:
    """Per (sample_key, prompt_id) of the staged rows, the models given: what the merge across files needs."""
    frame = rows.select(["sample_key", "prompt_id", "model", "pre_reason"]).to_pandas()
    frame = frame[frame.sample_key.notna() & frame.pre_reason.isna() & frame.model.notna()]
    if frame.empty:
        return pa.table({"key": pa.array([], pa.string()), "prompt_id": pa.array([], pa.string()),
                         "models": pa.array([], pa.list_(pa.string()))})
    grouped = frame.groupby(["sample_key", "prompt_id"]).model.agg(lambda models: sorted(set(models)))
    return pa.table({
        "key": pa.array(grouped.index.get_level_values(0).tolist(), pa.string()),
        "prompt_id": pa.array(grouped.index.get_level_values(1).tolist(), pa.string()),
        "models": pa.array(grouped.tolist(), pa.list_(pa.string())),
    })


def cross_file_merges(con: Any, rows: pa.Table) -> list[_Merge]:
    """Staged prompts that complete a stored prompt with the same sample_id (disjoint models, same split).

    The rule of `_merge_split_rows`, applied across files: the RouterBench rows of one sample_id can land
    in different files (the shared routerbench_subset puts some in its train and some in its test file).
    """
    with store.registered(con, "ingest_sample_keys", _sample_keys(rows)):
        partners = store.query(con, "ingest_key_partners", key_kind=ROUTERBENCH_KEY_KIND)
    if partners.empty:
        return []
    split_of = dict(zip(rows["prompt_id"].to_pylist(), rows["split"].to_pylist(), strict=True))
    merges: list[_Merge] = []
    taken: set[str] = set()
    for item in partners.itertuples(index=False):
        if item.staged_prompt_id in taken or item.stored_prompt_id in taken:
            continue
        staged_models = set(item.staged_models)
        stored_models = set(item.stored_models) if item.stored_models is not None else set()
        staged_split = split_of.get(item.staged_prompt_id)
        if staged_models & stored_models:
            continue  # overlapping results: two prompts that share a sample_id
        if staged_split is not None and not pd.isna(item.stored_split) and staged_split != item.stored_split:
            log.warning(
                "not merging %s into %s (same sample_id %s): split %s here, %s stored",
                item.staged_prompt_id, item.stored_prompt_id, item.key, staged_split, item.stored_split,
            )
            continue
        merges.append(_Merge(item.staged_prompt_id, item.stored_prompt_id, item.stored_text,
                             len(staged_models) > len(stored_models)))
        taken.update((item.staged_prompt_id, item.stored_prompt_id))
    return merges


def rows_pointed_at_stored(rows: pa.Table, merges: Sequence[_Merge]) -> pa.Table:
    """Staged rows of prompts that complete a fuller stored prompt, given that prompt's id and text."""
    into = {m.staged_prompt_id: (m.stored_prompt_id, m.stored_text) for m in merges if not m.staged_is_main}
    if not into:
        return rows
    ids = rows["prompt_id"].to_pylist()
    texts = rows["prompt"].to_pylist()
    new_ids = [into[i][0] if i in into else i for i in ids]
    new_texts = [into[i][1] if i in into else t for i, t in zip(ids, texts, strict=True)]
    rows = rows.set_column(rows.schema.get_field_index("prompt_id"), "prompt_id", pa.array(new_ids, pa.string()))
    return rows.set_column(rows.schema.get_field_index("prompt"), "prompt", pa.array(new_texts, pa.string()))


def merged_into_staged(con: Any, merge: _Merge, path: Path) -> bool:
    """Move a stored partial prompt to the id of the fuller staged prompt, if that prompt is being written.

    The one exception to append-only raw tables: one prompt must not live under two ids, and which of its
    rows is the fuller one is only known when the second file arrives.
    """
    if not store.query(con, "ingest_prompt_accepted", prompt_id=merge.staged_prompt_id).n.iloc[0]:
        return False
    params = {"from_prompt_id": merge.stored_prompt_id, "into_prompt_id": merge.staged_prompt_id}
    store.execute(con, "ingest_merge_results", **params)
    store.execute(con, "ingest_merge_prompt", from_prompt_id=merge.stored_prompt_id)
    store.execute(con, "ingest_merge_keys", **params)
    log.info("%s: merged the stored prompt %s into %s", path, merge.stored_prompt_id, merge.staged_prompt_id)
    return True
