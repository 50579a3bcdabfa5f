"""Staged rows: the one shape every input format is parsed into, the errors of unusable files, and cell parsers.

Every format module turns a file into a `Staged` table (`STAGE_SCHEMA`, one row per input row x model) so the
checks and the load are written once. Cell parsers keep what is not readable as text, so a reason can quote it."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pa_csv

from uniroute.errors import UnirouteError

log = logging.getLogger(__name__)

LONG_REQUIRED = ("prompt_id", "prompt", "model", "score", "cost")
LONG_OPTIONAL = ("benchmark", "split")
SPLITS = ("train", "val", "test")

# One staged row per (input row, model). `score_text`/`cost_text` hold a value given but not readable as a
# number; `pre_reason` a problem found while parsing; `raw` the input row as JSON for the quarantine (only
# where the SQL cannot rebuild it); `sample_key` the format's own key of a prompt split over several rows.
STAGE_SCHEMA = pa.schema(
    [
        ("row_number", pa.int64()),
        ("prompt_id", pa.string()),
        ("prompt", pa.string()),
        ("model", pa.string()),
        ("score", pa.float64()),
        ("score_text", pa.string()),
        ("cost", pa.float64()),
        ("cost_text", pa.string()),
        ("raw_score", pa.float64()),
        ("benchmark", pa.string()),
        ("split", pa.string()),
        ("sample_key", pa.string()),
        ("pre_reason", pa.string()),
        ("raw", pa.string()),
    ]
)


class IngestError(UnirouteError, ValueError):
    """A file (or request) that cannot be ingested at all; the message names the file, row and value."""


@dataclass(frozen=True)
class Staged:
    """A parsed file: its staged rows and what the parser noticed."""

    format: str
    rows: pa.Table  # STAGE_SCHEMA
    rows_read: int
    ignored_columns: tuple[str, ...] = ()
    per_model: bool = False  # an input row holds several models' results


def file_sha256(path: Path) -> str:
    """sha256 hex of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()


def decoded_text(path: Path, data: bytes) -> str:
    """The file's bytes as UTF-8 text (a BOM is dropped); anything else is an error naming the bad byte."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise IngestError(f"{path}: the file is UTF-16 text; save it as UTF-8")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise IngestError(
            f"{path}: not UTF-8 text: byte 0x{data[exc.start]:02x} at offset {exc.start} (line {line}); "
            "save the file as UTF-8"
        ) from exc


HEADER_CHARS = 1 << 20  # a header row is far shorter; a quoted name may still span lines within it


def csv_header(path: Path, text: str) -> list[str]:
    """The header row of CSV text; duplicated names are an error (columns would be ambiguous)."""
    try:
        # Only the head: StringIO keeps four bytes a character, so over the whole text it took 4x the file.
        header = next(csv.reader(io.StringIO(text[:HEADER_CHARS])))
    except csv.Error as exc:
        raise IngestError(f"{path}: cannot read a CSV header: {exc}") from exc
    except StopIteration as exc:
        raise IngestError(f"{path}: the file is empty") from exc
    seen: set[str] = set()
    # set.add returns None: the `or` records each name the first time it is seen.
    repeated = sorted({name for name in header if name in seen or seen.add(name)})  # type: ignore[func-returns-value]
    if repeated:
        raise IngestError(f"{path}: duplicated column names in the header: {repeated}")
    return header


def read_csv_strings(path: Path, text: str, header: list[str]) -> pd.DataFrame:
    """Every cell of a CSV as a string ('' when empty), so values are validated, not guessed (read_csv_table)."""
    return _read_csv(path, pa.BufferReader(text.encode("utf-8")), header).to_pandas()


def read_csv_table(path: Path, header: list[str]) -> pa.Table:
    """Every cell of the CSV file at path as an Arrow string ('' when empty), so values are validated, not guessed.

    Read from the file by Arrow (a UTF-8 BOM skipped) and kept as Arrow: a copy of the text re-encoded took the
    file's size again, and a pandas frame of Python strings about five times it.
    """
    return _read_csv(path, path, header)


def csv_options(header: list[str], block_size: int | None = None) -> dict[str, Any]:
    """Arrow's CSV options: the header's names, every cell as text ('' when empty), quoted newlines allowed."""
    return {
        "read_options": pa_csv.ReadOptions(column_names=header, skip_rows=1,
                                           **({"block_size": block_size} if block_size else {})),
        "parse_options": pa_csv.ParseOptions(newlines_in_values=True),
        "convert_options": pa_csv.ConvertOptions(
            column_types={name: pa.string() for name in header}, strings_can_be_null=False,
            quoted_strings_can_be_null=False,
        ),
    }


def _read_csv(path: Path, source: Any, header: list[str]) -> pa.Table:
    """Arrow's reader, because it refuses a row with a wrong number of cells (pandas silently turns one extra
    cell into an index, or pads a short row); quoted cells may span lines (RouterBench responses do)."""
    try:
        return pa_csv.read_csv(source, **csv_options(header))
    except pa.ArrowInvalid as exc:
        raise IngestError(f"{path}: not readable as CSV (truncated or malformed?): {exc}") from exc


def numbers_from_text(values: pd.Series, missing: frozenset[str] = frozenset({""})) -> tuple[pa.Array, pa.Array]:
    """Text cells parsed as float64 (null where missing) and the cells that are not numbers (else null).

    `missing` lists (lower-case, stripped) cells that mean "no value". Anything else that does not parse,
    including "nan", is returned as text so the quarantine reason quotes it.
    """
    text = values.astype(object)
    cleaned = text.str.strip().str.lower()
    absent = (cleaned.isna() | cleaned.isin(missing)).to_numpy()
    parsed = pd.to_numeric(text.where(~absent, None), errors="coerce").to_numpy(dtype="float64", na_value=np.nan)
    bad = np.isnan(parsed) & ~absent
    numbers = pa.array(parsed, type=pa.float64(), mask=absent | bad)
    bad_text = pa.array(np.where(bad, text.to_numpy(), None), type=pa.string())
    return numbers, bad_text


def blank_is_null(values: pd.Series) -> np.ndarray:
    """(n,) object array of the values, None where missing or blank."""
    out = values.to_numpy(dtype=object, na_value=None)
    blank = np.array([v is None or (isinstance(v, str) and not v.strip()) for v in out], dtype=bool)
    out[blank] = None
    return out


def numbers_from_objects(values: Sequence[Any]) -> tuple[pa.Array, pa.Array]:
    """JSON values as float64: numbers kept, numeric strings parsed, anything else returned as JSON text."""
    numbers: list[float | None] = []
    texts: list[str | None] = []
    for value in values:
        number: float | None = None
        text: str | None = None
        if isinstance(value, bool) or (value is not None and not isinstance(value, int | float | str)):
            text = json.dumps(value)  # true/false, lists and objects are not scores or costs
        elif isinstance(value, str):
            try:
                number = float(value) if value.strip() else None
            except ValueError:
                text = value
            if number is not None and math.isnan(number):
                number, text = None, value
        elif value is not None:
            try:
                number = float(value)
            except OverflowError:  # an integer beyond the range of a double
                text = str(value)
        numbers.append(number)
        texts.append(text)
    return pa.array(numbers, type=pa.float64()), pa.array(texts, type=pa.string())


def numbers_from_arrow(path: Path, column: pa.ChunkedArray, name: str) -> tuple[pa.Array, pa.Array]:
    """A typed (Parquet) column as float64 plus unreadable text; a column of another type fails the file."""
    kind = column.type
    if pa.types.is_float32(kind) or pa.types.is_float16(kind):
        # Through the shortest decimal text: float32 0.1 is 0.10000000149 as a float64, which would conflict
        # with the same log's 0.1 from a CSV and make re-ingesting a float32 export quarantine every row.
        return column.cast(pa.string()).cast(pa.float64()), pa.nulls(len(column))
    if pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_decimal(kind):
        return column.cast(pa.float64()), pa.nulls(len(column))
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return numbers_from_text(column.to_pandas())
    if pa.types.is_null(kind):
        return pa.nulls(len(column)), pa.nulls(len(column))
    raise IngestError(f"{path}: column {name!r} has type {kind}; it must hold numbers")


def as_strings(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """A column as strings, plain or dictionary-coded (ids may be stored as integers); chunks are kept."""
    kind = column.type.value_type if pa.types.is_dictionary(column.type) else column.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return column
    return column.cast(pa.string())


def staged_table(n: int, columns: dict[str, Any]) -> pa.Table:
    """A STAGE_SCHEMA table of n rows from the given columns; the others are all-null (of the null type,
    which allocates nothing: a null string column of 10M rows would be 40 MB of offsets)."""
    arrays = []
    for item in STAGE_SCHEMA:
        value = columns.get(item.name)
        if value is None or (isinstance(value, pa.Array | pa.ChunkedArray) and value.null_count == len(value)):
            arrays.append(pa.nulls(n))
        elif isinstance(value, pa.Array | pa.ChunkedArray):
            # Strings stay as read (large_string, or dictionary-coded from Parquet): converting 10M prompts
            # to plain strings would copy them for nothing.
            kind = value.type.value_type if pa.types.is_dictionary(value.type) else value.type
            same = kind == item.type or (pa.types.is_large_string(kind) and item.type == pa.string())
            arrays.append(value if same else value.cast(item.type))
        else:
            arrays.append(pa.array(value, type=item.type))
    return pa.Table.from_arrays(arrays, names=STAGE_SCHEMA.names)


def case_rename_hint(found: Sequence[str], missing: Sequence[str]) -> str:
    """' (names are lower-case: rename 'PROMPT_ID' to 'prompt_id', ...)' for found names that differ from a
    missing one only in case or surrounding spaces, else '': names are matched exactly."""
    renames = [f"{name!r} to {str(name).strip().lower()!r}" for name in found
               if str(name) not in missing and str(name).strip().lower() in missing]
    return f" (names are lower-case: rename {', '.join(renames)})" if renames else ""


def missing_columns_error(path: Path, found: Sequence[str], required: Sequence[str], kind: str) -> IngestError:
    """The error for a file without the columns its format needs, listing what it has instead."""
    missing = [name for name in required if name not in found]
    unknown = [name for name in found if name not in required and name not in LONG_OPTIONAL]
    hint = f"; unrecognised columns: {unknown}" if unknown else ""
    hint += case_rename_hint(unknown, missing)
    separator = next((sep for sep in (";", "\t", "|") if len(found) == 1 and sep in found[0]), None)
    if separator is not None:  # a spreadsheet's export in a locale that separates by ';'
        hint += f" (the header is one column holding {separator!r}: save the file with commas as separators)"
    return IngestError(f"{path}: missing required columns {missing} for the {kind} (needs {list(required)}){hint}")


def split_and_problems(own: pa.Array | None, split: str | None, n: int) -> tuple[pa.Array, pa.Array]:
    """Each row's split (the file's own column, else the --split option) and a problem where both are given
    and disagree: a silent override would hide a mislabelled file."""
    if own is None:
        given = pa.repeat(pa.scalar(split, pa.string()), n) if split is not None else pa.nulls(n)
        return given, pa.nulls(n)
    values = pd.Series(blank_is_null(own.to_pandas()), dtype=object)
    problems = np.full(n, None, dtype=object)
    if split is not None:
        clash = (values.notna() & (values != split)).to_numpy()
        problems[clash] = [f"split {json.dumps(v)} in the file but these results are read as split {split} "
                           "(--split, or `onboard`, which takes validation results)" for v in values[clash]]
        values = values.where(values.notna(), split)
    return pa.array(values.to_numpy(), type=pa.string()), pa.array(problems, type=pa.string())
