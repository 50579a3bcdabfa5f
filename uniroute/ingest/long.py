"""Long format (one row per prompt x model): Parquet, CSV and JSON lines."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from uniroute.ingest.staging import (
    LONG_OPTIONAL,
    LONG_REQUIRED,
    IngestError,
    Staged,
    as_strings,
    blank_is_null,
    csv_header,
    missing_columns_error,
    numbers_from_arrow,
    numbers_from_objects,
    numbers_from_text,
    read_csv_table,
    split_and_problems,
    staged_table,
)

log = logging.getLogger(__name__)

FORMAT_LONG_PARQUET = "long-parquet"
FORMAT_LONG_CSV = "long-csv"
FORMAT_LONG_JSONL = "long-jsonl"

def _long_staged(path: Path, fmt: str, columns: dict[str, Any], n: int, split: str | None,
                 ignored: Sequence[str], first_row: int = 1) -> Staged:
    """Staged rows of a long file from its columns (ids and text as strings, numbers as (value, bad text))."""
    split_values, split_problems = split_and_problems(columns.get("split"), split, n)
    problems = columns.get("pre_reason")
    if problems is None or problems.null_count == len(problems):
        problems = split_problems
    elif split_problems.null_count < len(split_problems):
        problems = pc.coalesce(problems, split_problems)
    if ignored and first_row == 1:
        log.info("%s: ignoring columns %s", path, list(ignored))
    rows = staged_table(
        n,
        {
            "row_number": np.arange(first_row, first_row + n, dtype=np.int64),
            "prompt_id": columns["prompt_id"],
            "prompt": columns["prompt"],
            "model": columns["model"],
            "score": columns["score"][0],
            "score_text": columns["score"][1],
            "cost": columns["cost"][0],
            "cost_text": columns["cost"][1],
            "benchmark": columns.get("benchmark"),
            "split": split_values,
            "pre_reason": problems,
            "raw": columns.get("raw"),
        },
    )
    return Staged(fmt, rows, n, tuple(ignored))


def long_parquet(path: Path, split: str | None) -> Staged:
    """Staged rows of a long Parquet file."""
    try:
        parquet = pq.ParquetFile(path)
        names = parquet.schema_arrow.names
        wanted, coded = long_parquet_wanted(path, parquet)
        table = pq.ParquetFile(path, read_dictionary=coded).read(columns=wanted)
    except (pa.ArrowException, OSError) as exc:
        raise IngestError(f"{path}: not a readable Parquet file (truncated?): {exc}") from exc
    if table.num_rows == 0:
        raise IngestError(f"{path}: no data rows")
    return long_parquet_columns(path, names, table, split)


def long_parquet_wanted(path: Path, parquet: pq.ParquetFile) -> tuple[list[str], list[str]]:
    """(columns to read, string columns to read dictionary-coded) of a long Parquet file; IngestError when a
    required column is missing."""
    names = parquet.schema_arrow.names
    if any(name not in names for name in LONG_REQUIRED):
        raise missing_columns_error(path, names, LONG_REQUIRED, "long format")
    wanted = [name for name in (*LONG_REQUIRED, *LONG_OPTIONAL) if name in names]
    # Ids and prompt texts repeat once per model: reading them dictionary-coded skips materialising
    # every copy, and the checks work on the codes anyway.
    coded: list[str] = [name for name in ("prompt_id", "prompt", "model", "benchmark") if name in wanted
             and (pa.types.is_string(parquet.schema_arrow.field(name).type)
                  or pa.types.is_large_string(parquet.schema_arrow.field(name).type))]
    return wanted, coded


def long_parquet_columns(path: Path, names: list[str], table: pa.Table, split: str | None,
                         first_row: int = 1) -> Staged:
    """Staged rows of a long Parquet file's columns (the whole file, or one batch starting at row first_row)."""
    n = table.num_rows
    wanted = table.column_names
    columns: dict[str, Any] = {name: as_strings(table[name]) for name in ("prompt_id", "prompt", "model")}
    columns["score"] = numbers_from_arrow(path, table["score"], "score")
    columns["cost"] = numbers_from_arrow(path, table["cost"], "cost")
    for name in LONG_OPTIONAL:
        if name in names:
            columns[name] = as_strings(table[name])
    ignored = [name for name in names if name not in wanted]
    return _long_staged(path, FORMAT_LONG_PARQUET, columns, n, split, ignored, first_row)


def long_csv(path: Path, text: str, split: str | None) -> Staged:
    """Staged rows of a long CSV file (every cell read as text, then validated)."""
    header = csv_header(path, text)
    if any(name not in header for name in LONG_REQUIRED):
        raise missing_columns_error(path, header, LONG_REQUIRED, "long format")
    table = read_csv_table(path, header)
    if table.num_rows == 0:
        raise IngestError(f"{path}: no data rows (only a header)")
    return long_csv_columns(path, header, table, split)


def long_csv_columns(path: Path, header: list[str], table: pa.Table, split: str | None,
                     first_row: int = 1) -> Staged:
    """Staged rows of a long CSV's text cells (a whole file, or one batch of it starting at data row first_row)."""
    n = table.num_rows
    # Ids and prompts stay Arrow strings: as Python objects they took about five times the file.
    columns: dict[str, Any] = {name: table[name] for name in ("prompt_id", "prompt", "model")}
    columns["score"] = numbers_from_text(table["score"].to_pandas())
    columns["cost"] = numbers_from_text(table["cost"].to_pandas())
    for name in LONG_OPTIONAL:
        if name in table.column_names:
            columns[name] = pa.array(blank_is_null(table[name].to_pandas()), pa.string())
    ignored = [name for name in header if name not in LONG_REQUIRED and name not in LONG_OPTIONAL]
    return _long_staged(path, FORMAT_LONG_CSV, columns, n, split, ignored, first_row)


def identifiers(values: Sequence[Any], name: str) -> tuple[pa.Array, list[str | None]]:
    """JSON values as identifier strings (integers allowed) and a problem for each value of another type."""
    out: list[str | None] = []
    problems: list[str | None] = []
    for value in values:
        if value is None or isinstance(value, str):
            out.append(value)
            problems.append(None)
        elif isinstance(value, int) and not isinstance(value, bool):
            out.append(str(value))
            problems.append(None)
        else:
            out.append(None)
            problems.append(f"{name} {json.dumps(value)[:80]} is not a string")
    return pa.array(out, type=pa.string()), problems


def first_problems(*lists: Sequence[str | None]) -> list[str | None]:
    """Element-wise, the first non-null problem."""
    return [next((p for p in items if p is not None), None) for items in zip(*lists, strict=True)]


def json_lines(path: Path, text: str) -> tuple[list[dict[str, Any]], list[str | None], list[str | None]]:
    """The records of JSON-lines text (see parsed_lines)."""
    # Lines end at "\n" only, as when a large file is read in blocks: a JSON string may hold a raw U+2028, which
    # str.splitlines() took for a line end.
    return parsed_lines(path, (line for line in text.split("\n") if line.strip()))


def parsed_lines(path: Path, lines: Iterable[str], first: int = 1
                 ) -> tuple[list[dict[str, Any]], list[str | None], list[str | None]]:
    """The records of non-blank JSON lines numbered from `first`, a problem per line (a later line that is not a
    JSON object: {} and its problem) and the raw text of the problem lines. A first line that is not JSON fails
    the file, and so does a line nested too deeply or holding a lone surrogate (naming the line)."""
    records: list[dict[str, Any]] = []
    problems: list[str | None] = []
    raws: list[str | None] = []
    problem: str | None
    for number, line in enumerate(lines, start=first):
        line = line.rstrip("\r\n")
        try:
            record = json.loads(line)
        except RecursionError:
            raise IngestError(f"{path}: line {number}: JSON nested too deeply to be a log (an array or object inside "
                              "another about a thousand times)") from None
        except json.JSONDecodeError as exc:
            if number == 1:
                raise IngestError(f"{path}: line 1 is not a JSON object, so this is not JSON lines: {exc}") from exc
            record, problem = {}, f"line {number} is not valid JSON ({exc.msg} at column {exc.colno})"
        else:
            problem = None if isinstance(record, dict) else f"line {number} is a JSON {type(record).__name__}"
            record = record if isinstance(record, dict) else {}
        if "\\u" in line:  # only an escape can make a lone surrogate (the file's bytes are valid UTF-8)
            _no_lone_surrogate(path, number, record)
        records.append(record)
        problems.append(problem)
        raws.append(line[:1000] if problem else None)
    return records, problems, raws


def _no_lone_surrogate(path: Path, number: int, record: dict[str, Any]) -> None:
    """IngestError naming the line when a decoded string holds a lone surrogate (\\ud800), which no UTF-8 text
    can store; a pair (\\ud83d\\ude00) decodes to one character and passes."""
    try:
        json.dumps(record, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise IngestError(f"{path}: line {number}: text that cannot be UTF-8 (a lone surrogate "
                          f"{exc.object[exc.start:exc.end]!r}): fix or drop those characters") from None


def long_jsonl(path: Path, text: str, split: str | None) -> Staged:
    """Staged rows of a JSON-lines long file; a later line that is not a JSON object is a quarantined row."""
    records, problems, raws = json_lines(path, text)
    found = list(dict.fromkeys(key for record in records for key in record))
    if any(name not in found for name in LONG_REQUIRED):
        raise missing_columns_error(path, found, LONG_REQUIRED, "long format")
    return long_jsonl_records(path, records, problems, raws, split)


def long_jsonl_records(path: Path, records: list[dict[str, Any]], problems: list[str | None],
                       raws: list[str | None], split: str | None, first_row: int = 1) -> Staged:
    """Staged rows of a long JSON-lines file's records (the whole file, or one block starting at row first_row)."""
    found = list(dict.fromkeys(key for record in records for key in record))
    columns: dict[str, Any] = {}
    problem_lists = [problems]
    for name in ("prompt_id", "model", *(name for name in LONG_OPTIONAL if name in found)):
        columns[name], issues = identifiers([record.get(name) for record in records], name)
        problem_lists.append(issues)
    prompts = [record.get("prompt") for record in records]
    columns["prompt"] = pa.array([v if isinstance(v, str) else None for v in prompts], type=pa.string())
    problem_lists.append([
        None if v is None or isinstance(v, str) else f"prompt {json.dumps(v)[:80]} is not text" for v in prompts
    ])
    columns["score"] = numbers_from_objects([record.get("score") for record in records])
    columns["cost"] = numbers_from_objects([record.get("cost") for record in records])
    columns["pre_reason"] = pa.array(first_problems(*problem_lists), type=pa.string())
    columns["raw"] = pa.array(raws, type=pa.string())
    ignored = [name for name in found if name not in LONG_REQUIRED and name not in LONG_OPTIONAL]
    return _long_staged(path, FORMAT_LONG_JSONL, columns, len(records), split, ignored, first_row)
