"""Pairwise preferences in the Chatbot Arena convention: CSV, JSON lines, a JSON list or Parquet.

One row per battle: `prompt_id` (or `question_id`), `prompt`, `model_a`, `model_b`, and `winner` in
{model_a, model_b, tie, tie (bothbad)} or a continuous `preference` in [0, 1] (the probability that model_a's
answer is better, from a judge that gives probabilities), with optional `benchmark` and `split`. Every battle
is staged with its outcome for model_a (`preference`: 1, 0, 0.5 for either kind of tie, or the judge's value);
`checks_pairwise` checks the rows and `load_pairwise` writes them to the `battles` table.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from uniroute.ingest.long import first_problems, identifiers, json_lines
from uniroute.ingest.staging import (
    LONG_OPTIONAL,
    IngestError,
    as_strings,
    blank_is_null,
    csv_header,
    numbers_from_arrow,
    numbers_from_objects,
    numbers_from_text,
    read_csv_strings,
    split_and_problems,
)

log = logging.getLogger(__name__)

FORMAT_PAIRWISE_CSV = "pairwise-csv"
FORMAT_PAIRWISE_JSONL = "pairwise-jsonl"
FORMAT_PAIRWISE_JSON = "pairwise-json"
FORMAT_PAIRWISE_PARQUET = "pairwise-parquet"
PAIRWISE_FORMATS = (FORMAT_PAIRWISE_CSV, FORMAT_PAIRWISE_JSONL, FORMAT_PAIRWISE_JSON, FORMAT_PAIRWISE_PARQUET)
PAIR_MODELS = ("model_a", "model_b")
PROMPT_ID_COLUMNS = ("prompt_id", "question_id")  # the first one present names the prompt
OUTCOME_COLUMNS = ("winner", "preference")  # at least one must be present
# Each winner's outcome for model_a; the arena convention counts both kinds of tie as half a win for each side.
WINNERS = {"model_a": 1.0, "model_b": 0.0, "tie": 0.5, "tie (bothbad)": 0.5}

# One staged row per input row (battle). `preference` is the outcome for model_a from `winner` or given;
# `preference_text` a given preference that is not a number; `pre_reason` a problem found while parsing.
PAIR_STAGE_SCHEMA = pa.schema(
    [
        ("row_number", pa.int64()),
        ("prompt_id", pa.string()),
        ("prompt", pa.string()),
        ("model_a", pa.string()),
        ("model_b", pa.string()),
        ("winner", pa.string()),
        ("preference", pa.float64()),
        ("preference_text", pa.string()),
        ("benchmark", pa.string()),
        ("split", pa.string()),
        ("pre_reason", pa.string()),
        ("raw", pa.string()),
    ]
)


@dataclass(frozen=True)
class StagedPairs:
    """A parsed pairwise file: one staged row per battle."""

    format: str
    rows: pa.Table  # PAIR_STAGE_SCHEMA
    rows_read: int
    ignored_columns: tuple[str, ...] = ()


def looks_pairwise(names: Sequence[str]) -> bool:
    """Whether columns (or a first record's keys) name a pairwise file: both model_a and model_b."""
    return all(name in names for name in PAIR_MODELS)


def pairwise_id_column(path: Path, names: Sequence[str]) -> str:
    """The prompt-id column of a pairwise file; an error naming what is missing otherwise."""
    missing = [name for name in ("prompt", *PAIR_MODELS) if name not in names]
    id_column = next((name for name in PROMPT_ID_COLUMNS if name in names), None)
    if id_column is None:
        missing.insert(0, "prompt_id (or question_id)")
    if not any(name in names for name in OUTCOME_COLUMNS):
        missing.append("winner (or preference)")
    if missing:
        raise IngestError(f"{path}: missing required columns {missing} for pairwise preferences (has {list(names)})")
    return str(id_column)


def _outcomes(winner: np.ndarray, preference: pa.Array, preference_text: pa.Array) -> tuple[pa.Array, list]:
    """(n,) outcome for model_a (null where unusable) and a problem per row (None where fine)."""
    out: list[float | None] = []
    problems: list[str | None] = []
    for w, p, bad in zip(winner.tolist(), preference.to_pylist(), preference_text.to_pylist(), strict=True):
        problem = None
        if w is not None and w not in WINNERS:
            problem = f"winner {json.dumps(w)} is not one of {', '.join(WINNERS)}"
        elif bad is not None:
            problem = f"preference {json.dumps(bad)} is not a number"
        elif p is not None and np.isnan(p):
            problem = "preference NaN is not a number in [0, 1]"
        elif p is not None and not 0.0 <= p <= 1.0:
            problem = f"preference {p!r} is outside [0, 1]"
        elif w is None and p is None:
            problem = "no winner and no preference"
        elif w is not None and p is not None and np.sign(p - 0.5) != np.sign(WINNERS[w] - 0.5):
            problem = f"winner {json.dumps(w)} disagrees with preference {p!r}"
        problems.append(problem)
        out.append(None if problem else (p if p is not None else WINNERS[w]))
    return pa.array(out, type=pa.float64()), problems


def _staged(path: Path, fmt: str, columns: dict[str, Any], n: int, split: str | None, ignored: Sequence[str],
            problems: list[str | None] | None = None, first_row: int = 1) -> StagedPairs:
    """Staged battles from columns: ids and texts as string arrays, preference as (numbers, unreadable text)."""
    winner = columns.get("winner")
    winner_values = (np.array(blank_is_null(winner.to_pandas()), dtype=object) if winner is not None
                     else np.full(n, None, dtype=object))
    numbers, texts = columns.get("preference", (pa.nulls(n, pa.float64()), pa.nulls(n, pa.string())))
    outcome, outcome_problems = _outcomes(winner_values, numbers, texts)
    split_values, split_problems = split_and_problems(columns.get("split"), split, n)
    reasons = first_problems(problems or [None] * n, outcome_problems, split_problems.to_pylist())
    if ignored and first_row == 1:
        log.info("%s: ignoring columns %s", path, list(ignored))
    table = pa.table(
        {
            "row_number": pa.array(np.arange(first_row, first_row + n, dtype=np.int64)),
            "prompt_id": columns["prompt_id"],
            "prompt": columns["prompt"],
            "model_a": columns["model_a"],
            "model_b": columns["model_b"],
            "winner": pa.array(winner_values, type=pa.string()),
            "preference": outcome,
            "preference_text": texts,
            "benchmark": columns.get("benchmark", pa.nulls(n, pa.string())),
            "split": split_values,
            "pre_reason": pa.array(reasons, type=pa.string()),
            "raw": columns.get("raw", pa.nulls(n, pa.string())),
        }
    )
    return StagedPairs(fmt, table.cast(PAIR_STAGE_SCHEMA), n, tuple(ignored))


def _ignored(names: Sequence[str], id_column: str) -> list[str]:
    known = {id_column, "prompt", *PAIR_MODELS, *OUTCOME_COLUMNS, *LONG_OPTIONAL}
    return [name for name in names if name not in known]


def pairwise_csv(path: Path, text: str, split: str | None) -> StagedPairs:
    """Staged battles of a pairwise CSV file (every cell read as text, then validated)."""
    header = csv_header(path, text)
    id_column = pairwise_id_column(path, header)
    frame = read_csv_strings(path, text, header)
    if len(frame) == 0:
        raise IngestError(f"{path}: no data rows (only a header)")
    return pairwise_csv_rows(path, header, id_column, frame, split)


def pairwise_csv_rows(path: Path, header: list[str], id_column: str, frame: pd.DataFrame, split: str | None,
                      first_row: int = 1) -> StagedPairs:
    """Staged battles of a pairwise CSV's text cells (the whole file, or a block starting at data row first_row)."""
    n = len(frame)

    def strings(name: str) -> pa.Array:
        return pa.array(frame[name].to_numpy(dtype=object), type=pa.string())

    columns: dict[str, Any] = {"prompt_id": strings(id_column), "prompt": strings("prompt"),
                               **{name: strings(name) for name in PAIR_MODELS}}
    if "winner" in frame:
        columns["winner"] = strings("winner")
    if "preference" in frame:
        columns["preference"] = numbers_from_text(frame["preference"])
    for name in LONG_OPTIONAL:
        if name in frame:
            columns[name] = pa.array(blank_is_null(frame[name]), pa.string())
    return _staged(path, FORMAT_PAIRWISE_CSV, columns, n, split, _ignored(header, id_column), first_row=first_row)


def pairwise_wanted(names: Sequence[str], id_column: str) -> list[str]:
    """The columns a pairwise reader uses, in the file's order."""
    used = {id_column, "prompt", *PAIR_MODELS, *OUTCOME_COLUMNS, *LONG_OPTIONAL}
    return [name for name in names if name in used]


def pairwise_records(path: Path, fmt: str, records: list[dict[str, Any]], problems: list[str | None],
                     raws: list[str | None], split: str | None, first_row: int = 1,
                     found: Sequence[str] | None = None) -> StagedPairs:
    """Staged battles from JSON records (lines of a JSONL file or entries of a JSON list; a block of them starting
    at row first_row, given the keys `found` in the whole file)."""
    if found is None:
        found = list(dict.fromkeys(key for record in records for key in record))
    id_column = pairwise_id_column(path, found)
    columns: dict[str, Any] = {}
    problem_lists = [problems]
    names = {"prompt_id": id_column, **{name: name for name in (*PAIR_MODELS, *LONG_OPTIONAL) if name in found}}
    for staged_name, name in names.items():
        columns[staged_name], issues = identifiers([record.get(name) for record in records], name)
        problem_lists.append(issues)
    for name in ("prompt", "winner"):
        values = [record.get(name) for record in records]
        columns[name] = pa.array([v if isinstance(v, str) else None for v in values], type=pa.string())
        problem_lists.append([None if v is None or isinstance(v, str) else f"{name} {json.dumps(v)[:80]} is not text"
                              for v in values])
    if "preference" in found:
        columns["preference"] = numbers_from_objects([record.get("preference") for record in records])
    columns["raw"] = pa.array(raws, type=pa.string())
    return _staged(path, fmt, columns, len(records), split, _ignored(found, id_column), first_problems(*problem_lists),
                   first_row)


def pairwise_jsonl(path: Path, text: str, split: str | None) -> StagedPairs:
    """Staged battles of a JSON-lines file; a later line that is not a JSON object is a quarantined row."""
    records, problems, raws = json_lines(path, text)
    return pairwise_records(path, FORMAT_PAIRWISE_JSONL, records, problems, raws, split)


def pairwise_json(path: Path, text: str, split: str | None) -> StagedPairs:
    """Staged battles of a JSON list of objects; an entry that is not an object is a quarantined row."""
    try:
        entries = json.loads(text)
    except json.JSONDecodeError as exc:
        raise IngestError(f"{path}: not valid JSON (truncated?): {exc.msg} at line {exc.lineno} column {exc.colno}") \
            from exc
    if not isinstance(entries, list) or not entries:
        raise IngestError(f"{path}: pairwise JSON must be a non-empty list of objects")
    return pairwise_entries(path, entries, split)


def pairwise_entries(path: Path, entries: list[Any], split: str | None, first: int = 1,
                     found: Sequence[str] | None = None) -> StagedPairs:
    """Staged battles of a JSON list's entries (all, or a block starting at entry first); an entry that is not an
    object is a quarantined row."""
    records = [entry if isinstance(entry, dict) else {} for entry in entries]
    problems = [None if isinstance(entry, dict) else f"entry {i} is a JSON {type(entry).__name__}, not an object"
                for i, entry in enumerate(entries, start=first)]
    raws = [None if isinstance(entry, dict) else json.dumps(entry)[:1000] for entry in entries]
    return pairwise_records(path, FORMAT_PAIRWISE_JSON, records, problems, raws, split, first, found)


def pairwise_parquet(path: Path, split: str | None) -> StagedPairs:
    """Staged battles of a pairwise Parquet file."""
    try:
        names = pq.ParquetFile(path).schema_arrow.names
        id_column = pairwise_id_column(path, names)
        table = pq.read_table(path, columns=pairwise_wanted(names, id_column))
    except (pa.ArrowException, OSError) as exc:
        raise IngestError(f"{path}: not a readable Parquet file (truncated?): {exc}") from exc
    if table.num_rows == 0:
        raise IngestError(f"{path}: no data rows")
    return pairwise_parquet_rows(path, names, id_column, table, split)


def pairwise_parquet_rows(path: Path, names: list[str], id_column: str, table: pa.Table, split: str | None,
                          first_row: int = 1) -> StagedPairs:
    """Staged battles of a pairwise Parquet file's columns (the whole file, or a batch starting at first_row)."""
    wanted = table.column_names
    columns: dict[str, Any] = {"prompt_id": as_strings(table[id_column]).combine_chunks()}
    for name in ("prompt", *PAIR_MODELS, "winner", *LONG_OPTIONAL):
        if name in wanted:
            columns[name] = as_strings(table[name]).combine_chunks()
    if "preference" in wanted:
        numbers, texts = numbers_from_arrow(path, table["preference"], "preference")
        as_array = [v.combine_chunks() if isinstance(v, pa.ChunkedArray) else v for v in (numbers, texts)]
        columns["preference"] = tuple(as_array)
    return _staged(path, FORMAT_PAIRWISE_PARQUET, columns, table.num_rows, split, _ignored(names, id_column),
                   first_row=first_row)
