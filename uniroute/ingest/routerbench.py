"""RouterBench wide CSV: one row per prompt, a 0/1 column and a `<model>|total_cost` column per model."""

from __future__ import annotations

import ast
import logging
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from uniroute.ingest.staging import (
    IngestError,
    Staged,
    csv_header,
    numbers_from_text,
    read_csv_strings,
    split_and_problems,
    staged_table,
)

log = logging.getLogger(__name__)

FORMAT_ROUTERBENCH = "routerbench-wide-csv"
# `<model>|total_cost` marks a model column, `<model>|model_response` is ignored.
WIDE_COST_SUFFIX = "|total_cost"
# Prefix of RouterBench prompt ids: the published row index, namespaced so it cannot collide with ids from
# other sources (and equal to the ids of the shared routerbench_subset/long.parquet).
ROUTERBENCH_ID_PREFIX = "rb0-"
ROUTERBENCH_KEY_KIND = "routerbench_sample_id"

def _routerbench_prompt(cell: str) -> tuple[str | None, str | None]:
    """A RouterBench prompt cell (a Python-list literal of strings) as text, and the problem if it is not one."""
    if not cell.strip():
        return None, None  # reported as an empty prompt by the row checks
    try:
        parts = ast.literal_eval(cell)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None, f"prompt is not a Python list literal of strings: {cell[:80]!r}"
    if not isinstance(parts, list) or not all(isinstance(part, str) for part in parts):
        return None, f"prompt is not a list of strings: {cell[:80]!r}"
    # RouterBench keeps a prompt as a list of strings; joined with '' as in the shared long.parquet.
    return "".join(parts), None


def routerbench_models(path: Path, header: list[str]) -> list[str]:
    """The models of a RouterBench wide CSV's header (IngestError when it is not one this reader takes)."""
    if header[0] != "":
        raise IngestError(
            f"{path}: a RouterBench wide CSV (it has {WIDE_COST_SUFFIX} columns) starts with an unnamed "
            f"row-index column, the prompt's id; this one starts with {header[0]!r}"
        )
    # Model columns are exactly the X that have an X|total_cost column (responses and the oracle are ignored).
    models = [name[: -len(WIDE_COST_SUFFIX)] for name in header if name.endswith(WIDE_COST_SUFFIX)]
    missing = [name for name in ("prompt", *models) if name not in header]
    if missing:
        raise IngestError(
            f"{path}: missing required columns {missing} for the RouterBench wide CSV (every <model>"
            f"{WIDE_COST_SUFFIX} column needs its <model> score column, and a prompt column)"
        )
    return models


def routerbench_wanted(header: list[str], models: list[str]) -> list[str]:
    """The columns the reader uses (the responses, often most of the file, are not read)."""
    used = {"", "prompt", "sample_id", "eval_name", *models, *(model + WIDE_COST_SUFFIX for model in models)}
    return [name for name in header if name in used]


def routerbench_csv(path: Path, text: str, split: str | None) -> Staged:
    """Staged rows of a RouterBench wide CSV: one row per prompt, a score and a cost column per model."""
    header = csv_header(path, text)
    models = routerbench_models(path, header)
    frame = read_csv_strings(path, text, header)
    if len(frame) == 0:
        raise IngestError(f"{path}: no data rows (only a header)")
    return routerbench_rows(path, header, models, frame, split)


def routerbench_rows(path: Path, header: list[str], models: list[str], frame: pd.DataFrame, split: str | None,
                     first_row: int = 1) -> Staged:
    """Staged rows of a RouterBench wide CSV's text cells (the whole file, or a block of it starting at data row
    first_row that holds every row of each of its sample_ids)."""
    n = len(frame)
    index = frame[""].str.strip().to_numpy(dtype=object)
    prompt_ids = np.where(index != "", ROUTERBENCH_ID_PREFIX + index, "").astype(object)
    parsed = [_routerbench_prompt(cell) for cell in frame["prompt"]]
    texts = np.array([text for text, _ in parsed], dtype=object)
    row_problems = np.array([problem for _, problem in parsed], dtype=object)
    # In this format a missing result is an empty cell or NaN.
    scores = [numbers_from_text(frame[model], missing=frozenset({"", "nan"})) for model in models]
    costs = [numbers_from_text(frame[model + WIDE_COST_SUFFIX], missing=frozenset({"", "nan"})) for model in models]
    present = np.column_stack(
        [(score.is_valid().to_numpy(zero_copy_only=False) | bad.is_valid().to_numpy(zero_copy_only=False))
         for score, bad in scores]
    )  # (n, M) bool: the row gives a result for the model
    sample_ids = frame["sample_id"].str.strip().to_numpy(dtype=object) if "sample_id" in frame else None
    if sample_ids is not None:
        _merge_split_rows(sample_ids, present, row_problems, prompt_ids, texts)
    rows, cols = np.nonzero(present)  # row-major: each input row's models in column order
    # A row with no result at all would otherwise vanish without a trace.
    empty = np.flatnonzero(~present.any(axis=1))
    order = np.argsort(np.concatenate([rows, empty]), kind="stable")
    rows_all = np.concatenate([rows, empty])[order]
    cols_all = np.concatenate([cols, np.full(len(empty), -1)])[order]
    has_model = cols_all >= 0
    problems = row_problems[rows_all].copy()
    problems[~has_model & pd.isna(problems)] = "no model has a result on this row"

    def per_result(arrays: list[pa.Array]) -> pa.Array:
        stacked = pa.chunked_array([a for a in arrays] + [pa.nulls(1, arrays[0].type)]).combine_chunks()
        # flat index (model j, row i) -> j * n + i; rows without a model point at the trailing null
        flat = np.where(has_model, cols_all * n + rows_all, len(models) * n)
        return stacked.take(pa.array(flat))

    model_names = np.array([*models, None], dtype=object)[np.where(has_model, cols_all, len(models))]
    benchmark = frame["eval_name"].to_numpy(dtype=object) if "eval_name" in frame else None
    split_values, _ = split_and_problems(None, split, len(rows_all))
    staged = staged_table(
        len(rows_all),
        {
            "row_number": rows_all + first_row,
            "prompt_id": prompt_ids[rows_all],
            "prompt": texts[rows_all],
            "model": model_names,
            "score": per_result([s for s, _ in scores]),
            "score_text": per_result([b for _, b in scores]),
            "cost": per_result([c for c, _ in costs]),
            "cost_text": per_result([b for _, b in costs]),
            "benchmark": None if benchmark is None else np.where(benchmark[rows_all] == "", None, benchmark[rows_all]),
            "split": split_values,
            "sample_key": None if sample_ids is None else np.where(
                sample_ids[rows_all] == "", None, sample_ids[rows_all]),
            "pre_reason": problems,
        },
    )
    ignored = [
        name for name in header
        if name not in ("", "prompt", "sample_id", "eval_name", *models)
        and not name.endswith((WIDE_COST_SUFFIX, "|model_response"))
    ]
    if ignored and first_row == 1:
        log.info("%s: ignoring columns %s", path, ignored)
    return Staged(FORMAT_ROUTERBENCH, staged, n, tuple(ignored), per_model=True)


def _merge_split_rows(sample_ids: np.ndarray, present: np.ndarray, row_problems: np.ndarray,
                      prompt_ids: np.ndarray, texts: np.ndarray) -> None:
    """Point rows that are one prompt split across rows at that prompt's id and text (in place).

    RouterBench publishes some prompts as several rows with the same sample_id, each giving results for
    a disjoint set of models (see routerbench_subset/PROVENANCE.md). Rows sharing a sample_id whose
    result columns do not overlap are therefore one prompt; its id and text are those of the row with the
    most results (ties: the first row). Rows that overlap are distinct prompts that share a sample_id.
    """
    keyed = pd.Series(sample_ids)
    usable = keyed.ne("").to_numpy() & pd.isna(row_problems) & keyed.duplicated(keep=False).to_numpy()
    for _, group in keyed[usable].groupby(keyed[usable]).groups.items():
        rows = np.asarray(group)
        if (present[rows].sum(axis=0) > 1).any():
            continue
        main = rows[np.argmax(present[rows].sum(axis=1))]
        prompt_ids[rows] = prompt_ids[main]
        texts[rows] = texts[main]
