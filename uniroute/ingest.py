"""Validate benchmark logs (long, RouterBench wide CSV, RouterDC JSON) and load them into the store.

One file, one transaction:
1. read: the format is detected by content and parsed into staged Arrow rows (`STAGE_SCHEMA`), one per
   (input row, model); what cannot be parsed at all is an IngestError naming the file, row and value;
2. check rows: strings are dictionary-coded and each row is checked on its own and within its file with
   vectorised numpy/pyarrow (`checked_rows`); a rejected row gets a reason;
3. check against the store: SQL (`sql/queries/ingest_*.sql`) finds rows that repeat a stored result
   (skipped) or contradict a stored prompt or result (quarantined);
4. write: new models, prompts and results, the quarantine and the file's content hash, then commit.
A killed process leaves nothing (DuckDB commits atomically); a file whose hash is stored is skipped.
"""

from __future__ import annotations

import ast
import contextlib
import csv
import difflib
import hashlib
import io
import json
import logging
import math
import re
import shutil
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
from tqdm import tqdm

from uniroute import store

log = logging.getLogger(__name__)

LONG_REQUIRED = ("prompt_id", "prompt", "model", "score", "cost")
LONG_OPTIONAL = ("benchmark", "split")
SPLITS = ("train", "val", "test")

FORMAT_LONG_PARQUET = "long-parquet"
FORMAT_LONG_CSV = "long-csv"
FORMAT_LONG_JSONL = "long-jsonl"
FORMAT_ROUTERBENCH = "routerbench-wide-csv"
FORMAT_ROUTERDC = "routerdc-json"

# RouterBench wide CSV: `<model>|total_cost` marks a model column, `<model>|model_response` is ignored.
WIDE_COST_SUFFIX = "|total_cost"
# Prefix of RouterBench prompt ids: the published row index, namespaced so it cannot collide with ids from
# other sources (and equal to the ids of the shared routerbench_subset/long.parquet).
ROUTERBENCH_ID_PREFIX = "rb0-"
ROUTERBENCH_KEY_KIND = "routerbench_sample_id"
ROUTERDC_ID_PREFIX = "rdc-"
# RouterDC names the task only in the file name, with the published train/test split as a suffix. The split
# is not part of the task's identity: the same question in both splits is one prompt.
ROUTERDC_SPLIT_SUFFIX = re.compile(r"[_-](train|test)$")
# Scores published as k/n for some n up to this are fractions of correct samples (generative tasks).
GRID_MAX_DENOMINATOR = 20
GRID_TOLERANCE = 1e-9

LARGE_FILE_BYTES = 8 * 1024 * 1024
STAGES = ("read", "check rows", "check against the store", "write")
# The SQL that checks a file's coded rows against the store, in order (each builds one temp table or view).
CHECK_STATEMENTS = (
    "ingest_prompt_state",
    "ingest_model_state",
    "ingest_check_store",
    "ingest_accepted",
    "ingest_accepted_prompts",
    "ingest_accepted_models",
    "ingest_quarantined",
)

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


class IngestError(ValueError):
    """A file (or request) that cannot be ingested at all; the message names the file, row and value."""


@dataclass(frozen=True)
class IngestSummary:
    """What ingesting one file did."""

    path: str
    file_hash: str
    format: str
    status: str  # 'ingested' or 'skipped' (this content was ingested before)
    rows_read: int = 0  # input rows (CSV/JSONL/Parquet rows, JSON list entries)
    rows_accepted: int = 0  # new results written (one per prompt x model)
    rows_duplicate: int = 0  # results repeating an earlier row or a stored result, skipped
    rows_quarantined: int = 0  # input rows with at least one quarantined result
    new_prompts: int = 0
    new_models: int = 0
    merged_prompts: int = 0  # prompts split over rows of several files, merged (RouterBench)
    landed_models: tuple[str, ...] = ()  # models with new results on 'val' or unknown-split prompts
    seconds: float = 0.0
    ignored_columns: tuple[str, ...] = field(default=())

    def line(self) -> str:
        """One line for a terminal."""
        name = Path(self.path).name
        if self.status == "skipped":
            return f"{name}: skipped, this content ({self.file_hash[:12]}) was ingested before"
        return (
            f"{name} [{self.format}]: {self.rows_read:,} rows read, {self.rows_accepted:,} results accepted, "
            f"{self.rows_duplicate:,} duplicates skipped, {self.rows_quarantined:,} rows quarantined, "
            f"{self.new_prompts:,} new prompts, {self.new_models:,} new models ({self.seconds:.1f} s)"
        )

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        out = asdict(self)
        out["landed_models"] = list(self.landed_models)
        out["ignored_columns"] = list(self.ignored_columns)
        return out


@dataclass(frozen=True)
class InboxOutcome:
    """What happened to one inbox file: moved to done/ (ingested or skipped) or failed/ (with the reason)."""

    name: str
    status: str  # 'ingested', 'skipped' or 'failed'
    moved_to: str
    summary: IngestSummary | None
    error: str | None

    @property
    def landed_models(self) -> tuple[str, ...]:
        return self.summary.landed_models if self.summary is not None else ()

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready fields, with the summary's landed_models at the top level."""
        return {
            "name": self.name,
            "status": self.status,
            "moved_to": self.moved_to,
            "error": self.error,
            "landed_models": list(self.landed_models),
            "summary": self.summary.as_dict() if self.summary is not None else None,
        }


@dataclass(frozen=True)
class Staged:
    """A parsed file: its staged rows and what the parser noticed."""

    format: str
    rows: pa.Table  # STAGE_SCHEMA
    rows_read: int
    ignored_columns: tuple[str, ...] = ()
    per_model: bool = False  # an input row holds several models' results


# ---------------------------------------------------------------------------------------------- reading


def file_sha256(path: Path) -> str:
    """sha256 hex of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()


def _decoded_text(path: Path, data: bytes) -> str:
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


def detect_format(path: Path, head: bytes, text: str | None) -> str:
    """The format of a file from its content: leading bytes, then the first character, then the CSV header."""
    if head.startswith(b"PAR1"):
        return FORMAT_LONG_PARQUET
    if head.startswith(b"\x1f\x8b"):
        raise IngestError(f"{path}: a gzip-compressed file; decompress it first")
    if head.startswith(b"PK\x03\x04"):
        raise IngestError(f"{path}: a zip archive (or .xlsx workbook), not CSV, JSON lines or Parquet")
    assert text is not None
    stripped = text.lstrip()
    if stripped.startswith("["):
        return FORMAT_ROUTERDC
    if stripped.startswith("{"):
        return FORMAT_LONG_JSONL
    header = _csv_header(path, text)
    if any(name.endswith(WIDE_COST_SUFFIX) for name in header):
        return FORMAT_ROUTERBENCH
    return FORMAT_LONG_CSV


def _csv_header(path: Path, text: str) -> list[str]:
    """The header row of CSV text; duplicated names are an error (columns would be ambiguous)."""
    try:
        header = next(csv.reader(io.StringIO(text)))
    except csv.Error as exc:
        raise IngestError(f"{path}: cannot read a CSV header: {exc}") from exc
    except StopIteration as exc:
        raise IngestError(f"{path}: the file is empty") from exc
    seen: set[str] = set()
    repeated = sorted({name for name in header if name in seen or seen.add(name)})
    if repeated:
        raise IngestError(f"{path}: duplicated column names in the header: {repeated}")
    return header


def _read_csv_strings(path: Path, text: str, header: list[str]) -> pd.DataFrame:
    """Every cell of a CSV as a string ('' when empty), so values are validated, not guessed.

    Arrow's reader, because it refuses a row with a wrong number of cells (pandas silently turns one extra
    cell into an index, or pads a short row); quoted cells may span lines (RouterBench responses do).
    """
    try:
        table = pa_csv.read_csv(
            pa.BufferReader(text.encode("utf-8")),
            read_options=pa_csv.ReadOptions(column_names=header, skip_rows=1),
            parse_options=pa_csv.ParseOptions(newlines_in_values=True),
            convert_options=pa_csv.ConvertOptions(
                column_types={name: pa.string() for name in header}, strings_can_be_null=False,
                quoted_strings_can_be_null=False,
            ),
        )
    except pa.ArrowInvalid as exc:
        raise IngestError(f"{path}: not readable as CSV (truncated or malformed?): {exc}") from exc
    return table.to_pandas()


def _numbers_from_text(values: pd.Series, missing: frozenset[str] = frozenset({""})) -> tuple[pa.Array, pa.Array]:
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


def _blank_is_null(values: pd.Series) -> np.ndarray:
    """(n,) object array of the values, None where missing or blank."""
    out = values.to_numpy(dtype=object, na_value=None)
    blank = np.array([v is None or (isinstance(v, str) and not v.strip()) for v in out], dtype=bool)
    out[blank] = None
    return out


def _numbers_from_objects(values: Sequence[Any]) -> tuple[pa.Array, pa.Array]:
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


def _numbers_from_arrow(path: Path, column: pa.ChunkedArray, name: str) -> tuple[pa.Array, pa.Array]:
    """A typed (Parquet) column as float64 plus unreadable text; a column of another type fails the file."""
    kind = column.type
    if pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_decimal(kind):
        return column.cast(pa.float64()), pa.nulls(len(column))
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return _numbers_from_text(column.to_pandas())
    if pa.types.is_null(kind):
        return pa.nulls(len(column)), pa.nulls(len(column))
    raise IngestError(f"{path}: column {name!r} has type {kind}; it must hold numbers")


def _strings(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """A column as strings, plain or dictionary-coded (ids may be stored as integers); chunks are kept."""
    kind = column.type.value_type if pa.types.is_dictionary(column.type) else column.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return column
    return column.cast(pa.string())


def _staged_table(n: int, columns: dict[str, Any]) -> pa.Table:
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


def _missing_columns_error(path: Path, found: Sequence[str], required: Sequence[str], kind: str) -> IngestError:
    """The error for a file without the columns its format needs, listing what it has instead."""
    missing = [name for name in required if name not in found]
    unknown = [name for name in found if name not in required and name not in LONG_OPTIONAL]
    hint = f"; unrecognised columns: {unknown}" if unknown else ""
    return IngestError(f"{path}: missing required columns {missing} for the {kind} (needs {list(required)}){hint}")


def _split_and_problems(own: pa.Array | None, split: str | None, n: int) -> tuple[pa.Array, pa.Array]:
    """Each row's split (the file's own column, else the --split option) and a problem where both are given
    and disagree: a silent override would hide a mislabelled file."""
    if own is None:
        given = pa.repeat(pa.scalar(split, pa.string()), n) if split is not None else pa.nulls(n)
        return given, pa.nulls(n)
    values = pd.Series(_blank_is_null(own.to_pandas()), dtype=object)
    problems = np.full(n, None, dtype=object)
    if split is not None:
        clash = (values.notna() & (values != split)).to_numpy()
        problems[clash] = [f"split {json.dumps(v)} in the file but --split {split} was given" for v in values[clash]]
        values = values.where(values.notna(), split)
    return pa.array(values.to_numpy(), type=pa.string()), pa.array(problems, type=pa.string())


def _long_staged(path: Path, fmt: str, columns: dict[str, Any], n: int, split: str | None,
                 ignored: Sequence[str]) -> Staged:
    """Staged rows of a long file from its columns (ids and text as strings, numbers as (value, bad text))."""
    split_values, split_problems = _split_and_problems(columns.get("split"), split, n)
    problems = columns.get("pre_reason")
    if problems is None or problems.null_count == len(problems):
        problems = split_problems
    elif split_problems.null_count < len(split_problems):
        problems = pc.coalesce(problems, split_problems)
    if ignored:
        log.info("%s: ignoring columns %s", path, list(ignored))
    rows = _staged_table(
        n,
        {
            "row_number": np.arange(1, n + 1, dtype=np.int64),
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


def _long_parquet(path: Path, split: str | None) -> Staged:
    """Staged rows of a long Parquet file."""
    try:
        parquet = pq.ParquetFile(path)
        names = parquet.schema_arrow.names
        if any(name not in names for name in LONG_REQUIRED):
            raise _missing_columns_error(path, names, LONG_REQUIRED, "long format")
        wanted = [name for name in (*LONG_REQUIRED, *LONG_OPTIONAL) if name in names]
        # Ids and prompt texts repeat once per model: reading them dictionary-coded skips materialising
        # every copy, and the checks work on the codes anyway.
        coded = [name for name in ("prompt_id", "prompt", "model", "benchmark") if name in wanted
                 and (pa.types.is_string(parquet.schema_arrow.field(name).type)
                      or pa.types.is_large_string(parquet.schema_arrow.field(name).type))]
        table = pq.ParquetFile(path, read_dictionary=coded).read(columns=wanted)
    except (pa.ArrowException, OSError) as exc:
        raise IngestError(f"{path}: not a readable Parquet file (truncated?): {exc}") from exc
    n = table.num_rows
    if n == 0:
        raise IngestError(f"{path}: no data rows")
    columns: dict[str, Any] = {name: _strings(table[name]) for name in ("prompt_id", "prompt", "model")}
    columns["score"] = _numbers_from_arrow(path, table["score"], "score")
    columns["cost"] = _numbers_from_arrow(path, table["cost"], "cost")
    for name in LONG_OPTIONAL:
        if name in names:
            columns[name] = _strings(table[name])
    ignored = [name for name in names if name not in wanted]
    return _long_staged(path, FORMAT_LONG_PARQUET, columns, n, split, ignored)


def _long_csv(path: Path, text: str, split: str | None) -> Staged:
    """Staged rows of a long CSV file (every cell read as text, then validated)."""
    header = _csv_header(path, text)
    if any(name not in header for name in LONG_REQUIRED):
        raise _missing_columns_error(path, header, LONG_REQUIRED, "long format")
    frame = _read_csv_strings(path, text, header)
    n = len(frame)
    if n == 0:
        raise IngestError(f"{path}: no data rows (only a header)")
    columns: dict[str, Any] = {
        name: pa.array(frame[name].to_numpy(dtype=object), type=pa.string())
        for name in ("prompt_id", "prompt", "model")
    }
    columns["score"] = _numbers_from_text(frame["score"])
    columns["cost"] = _numbers_from_text(frame["cost"])
    for name in LONG_OPTIONAL:
        if name in frame:
            columns[name] = pa.array(_blank_is_null(frame[name]), pa.string())
    ignored = [name for name in header if name not in LONG_REQUIRED and name not in LONG_OPTIONAL]
    return _long_staged(path, FORMAT_LONG_CSV, columns, n, split, ignored)


def _identifiers(values: Sequence[Any], name: str) -> tuple[pa.Array, list[str | None]]:
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


def _first_problems(*lists: Sequence[str | None]) -> list[str | None]:
    """Element-wise, the first non-null problem."""
    return [next((p for p in items if p is not None), None) for items in zip(*lists, strict=True)]


def _long_jsonl(path: Path, text: str, split: str | None) -> Staged:
    """Staged rows of a JSON-lines long file; a later line that is not a JSON object is a quarantined row."""
    lines = [line for line in text.splitlines() if line.strip()]
    records: list[dict[str, Any]] = []
    problems: list[str | None] = []
    raws: list[str | None] = []
    for number, line in enumerate(lines, start=1):
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            if number == 1:
                raise IngestError(f"{path}: line 1 is not a JSON object, so this is not JSON lines: {exc}") from exc
            record, problem = {}, f"line {number} is not valid JSON ({exc.msg} at column {exc.colno})"
        else:
            problem = None if isinstance(record, dict) else f"line {number} is a JSON {type(record).__name__}"
            record = record if isinstance(record, dict) else {}
        records.append(record)
        problems.append(problem)
        raws.append(line[:1000] if problem else None)
    found = list(dict.fromkeys(key for record in records for key in record))
    if any(name not in found for name in LONG_REQUIRED):
        raise _missing_columns_error(path, found, LONG_REQUIRED, "long format")
    columns: dict[str, Any] = {}
    problem_lists = [problems]
    for name in ("prompt_id", "model", *(name for name in LONG_OPTIONAL if name in found)):
        columns[name], issues = _identifiers([record.get(name) for record in records], name)
        problem_lists.append(issues)
    prompts = [record.get("prompt") for record in records]
    columns["prompt"] = pa.array([v if isinstance(v, str) else None for v in prompts], type=pa.string())
    problem_lists.append([
        None if v is None or isinstance(v, str) else f"prompt {json.dumps(v)[:80]} is not text" for v in prompts
    ])
    columns["score"] = _numbers_from_objects([record.get("score") for record in records])
    columns["cost"] = _numbers_from_objects([record.get("cost") for record in records])
    columns["pre_reason"] = pa.array(_first_problems(*problem_lists), type=pa.string())
    columns["raw"] = pa.array(raws, type=pa.string())
    ignored = [name for name in found if name not in LONG_REQUIRED and name not in LONG_OPTIONAL]
    return _long_staged(path, FORMAT_LONG_JSONL, columns, len(records), split, ignored)


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


def _routerbench_csv(path: Path, text: str, split: str | None) -> Staged:
    """Staged rows of a RouterBench wide CSV: one row per prompt, a score and a cost column per model."""
    header = _csv_header(path, text)
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
    frame = _read_csv_strings(path, text, header)
    n = len(frame)
    if n == 0:
        raise IngestError(f"{path}: no data rows (only a header)")
    index = frame[""].str.strip().to_numpy(dtype=object)
    prompt_ids = np.where(index != "", ROUTERBENCH_ID_PREFIX + index, "").astype(object)
    parsed = [_routerbench_prompt(cell) for cell in frame["prompt"]]
    texts = np.array([text for text, _ in parsed], dtype=object)
    row_problems = np.array([problem for _, problem in parsed], dtype=object)
    # In this format a missing result is an empty cell or NaN.
    scores = [_numbers_from_text(frame[model], missing=frozenset({"", "nan"})) for model in models]
    costs = [_numbers_from_text(frame[model + WIDE_COST_SUFFIX], missing=frozenset({"", "nan"})) for model in models]
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
    split_values, _ = _split_and_problems(None, split, len(rows_all))
    staged = _staged_table(
        len(rows_all),
        {
            "row_number": rows_all + 1,
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
    if ignored:
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


class _JsonObject(dict):
    """A JSON object that remembers keys given twice (json keeps only the last value, silently)."""

    repeated: tuple[str, ...] = ()


def _json_object(pairs: list[tuple[str, Any]]) -> _JsonObject:
    obj = _JsonObject(pairs)
    if len(obj) != len(pairs):
        counts = pd.Series([key for key, _ in pairs]).value_counts()
        obj.repeated = tuple(sorted(counts[counts > 1].index))
    return obj


def _on_grid(values: np.ndarray) -> np.ndarray:
    """(n,) bool: each value equals k/d for some denominator d <= GRID_MAX_DENOMINATOR."""
    unique, inverse = np.unique(values, return_inverse=True)
    denominators = np.arange(1, GRID_MAX_DENOMINATOR + 1, dtype=np.float64)
    scaled = unique[:, None] * denominators[None, :]  # (u, D)
    close = np.abs(scaled - np.round(scaled)) <= GRID_TOLERANCE * denominators
    return close.any(axis=1)[inverse]


def _routerdc_json(path: Path, text: str, split: str | None) -> Staged:
    """Staged rows of a RouterDC JSON file: a list of {"question", "scores": {model: score}}."""
    try:
        entries = json.loads(text, object_pairs_hook=_json_object)
    except json.JSONDecodeError as exc:
        raise IngestError(
            f"{path}: not valid JSON (truncated?): {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from exc
    if not isinstance(entries, list):
        raise IngestError(f"{path}: a JSON {type(entries).__name__}; a RouterDC file is a list of objects")
    if not entries:
        raise IngestError(f"{path}: no data rows (an empty list)")
    if not any(isinstance(e, dict) and "question" in e and "scores" in e for e in entries):
        first = entries[0]
        shape = f"keys {sorted(first)}" if isinstance(first, dict) else f"a {type(first).__name__}"
        raise IngestError(
            f'{path}: not a RouterDC file: no entry has both "question" and "scores" (entry 1 has {shape})'
        )
    benchmark = ROUTERDC_SPLIT_SUFFIX.sub("", path.stem)
    row_numbers: list[int] = []
    prompt_ids: list[str | None] = []
    prompts: list[str | None] = []
    models: list[str | None] = []
    values: list[Any] = []
    problems: list[str | None] = []
    raws: list[str | None] = []
    for number, entry in enumerate(entries, start=1):
        problem = None
        question = entry.get("question") if isinstance(entry, dict) else None
        scores = entry.get("scores") if isinstance(entry, dict) else None
        if not isinstance(entry, dict):
            problem = f"entry is a JSON {type(entry).__name__}, not an object"
        elif question is None:
            problem = "question is missing"
        elif not isinstance(question, str):
            problem = f"question {json.dumps(question)[:80]} is not text"
        elif not isinstance(scores, dict):
            problem = "scores is missing" if scores is None else f"scores {json.dumps(scores)[:80]} is not an object"
        elif not scores:
            problem = "scores is empty"
        elif isinstance(scores, _JsonObject) and scores.repeated:
            problem = f"scores names models {list(scores.repeated)} more than once"
        prompt_id = None
        if isinstance(question, str):
            # The format has no ids: the id is the hash of (task, question), as in the shared long.parquet.
            digest = hashlib.sha1(f"{benchmark}\0{question}".encode()).hexdigest()[:16]
            prompt_id = ROUTERDC_ID_PREFIX + digest
        pairs = [(None, None)] if problem else list(scores.items())
        for model, value in pairs:
            row_numbers.append(number)
            prompt_ids.append(prompt_id)
            prompts.append(question if isinstance(question, str) else None)
            models.append(model)
            values.append(value)
            problems.append(problem)
            raws.append(json.dumps(entry)[:1000] if problem else None)
    score, score_text = _numbers_from_objects(values)
    raw = score.to_numpy(zero_copy_only=False)  # (n,) NaN where absent
    valid = ~np.isnan(raw) & (raw >= 0) & (raw <= 1)
    raw_score = pa.nulls(len(raw), pa.float64())
    if valid.any() and not _on_grid(raw[valid]).all():
        # The format mixes two kinds of score (routerdc_model7/PROVENANCE.md): generative tasks publish the
        # fraction of sampled answers that were correct (always k/n for a small n), multiple-choice tasks the
        # probability of the gold option when the argmax answer is correct, else 0. A file with any value off
        # that grid is of the second kind: its values are not correctness, but correctness is (value > 0).
        # The published value is kept in results.raw_score; invalid values stay as they are and are quarantined.
        raw_score = pa.array(np.where(valid, raw, np.nan), type=pa.float64(), mask=~valid)
        score = pa.array(np.where(valid, (raw > 0).astype(np.float64), raw), type=pa.float64(), mask=np.isnan(raw))
        log.info("%s: scores are gold-option probabilities; storing correctness = (score > 0)", path)
    n = len(row_numbers)
    split_values, _ = _split_and_problems(None, split, n)
    staged = _staged_table(
        n,
        {
            "row_number": row_numbers,
            "prompt_id": prompt_ids,
            "prompt": prompts,
            "model": models,
            "score": score,
            "score_text": score_text,
            "raw_score": raw_score,
            "benchmark": [benchmark] * n,
            "split": split_values,
            "pre_reason": problems,
            "raw": raws,
        },
    )
    ignored = sorted({key for e in entries if isinstance(e, dict) for key in e} - {"question", "scores", "cluster_id"})
    return Staged(FORMAT_ROUTERDC, staged, len(entries), tuple(ignored), per_model=True)


def staged_file(path: Path, split: str | None = None) -> Staged:
    """Parse a file of any supported format (detected by content) into staged rows; IngestError if unusable."""
    path = Path(path)
    try:
        with open(path, "rb") as handle:
            head = handle.read(8)
    except IsADirectoryError as exc:
        raise IngestError(f"{path}: a directory, not a file") from exc
    except PermissionError as exc:
        raise IngestError(f"{path}: cannot read the file: {exc.strerror}") from exc
    if not head:
        raise IngestError(f"{path}: the file is empty")
    if head.startswith(b"PAR1"):
        return _long_parquet(path, split)
    text = None
    if not head.startswith((b"\x1f\x8b", b"PK\x03\x04")):
        text = _decoded_text(path, path.read_bytes())
        if not text.strip():
            raise IngestError(f"{path}: the file is empty (only whitespace)")
        if "\x00" in text:
            raise IngestError(f"{path}: a binary file (NUL bytes at offset {text.index(chr(0))}), not CSV or JSON")
    fmt = detect_format(path, head, text)
    assert text is not None
    readers = {
        FORMAT_LONG_CSV: _long_csv,
        FORMAT_LONG_JSONL: _long_jsonl,
        FORMAT_ROUTERBENCH: _routerbench_csv,
        FORMAT_ROUTERDC: _routerdc_json,
    }
    return readers[fmt](path, text, split)


# ---------------------------------------------------------------------------------------------- checking

# Identifiers (prompt ids, model names) that a spreadsheet would run as a formula if the store's tables were
# exported (CSV injection); real ids never start like this.
FORMULA_START = r"^[=+\-@\t\r]"
BLANK = " \t\r\n"


@dataclass(frozen=True)
class Checked:
    """Staged rows after the checks within their file, as coded tables for the SQL against the store.

    Strings are dictionary-coded once (pid, mid) so the checks and joins over millions of rows compare
    integers; each distinct id, model and text is validated once.
    """

    candidates: pa.Table  # row_number, pid, mid, score, cost, raw_score: rows that passed (one per key)
    prompts: pa.Table  # pid, prompt_id, text, benchmark, split, sample_key: prompts of the candidates
    models: pa.Table  # mid, model: models of the candidates
    rejects: pa.Table  # row_number, reason, raw: one per rejected staged row
    duplicates: int  # staged rows that repeat an earlier row's result exactly (dropped)


def _codes(column: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, pa.Array]:
    """(n,) integer codes of a string column (-1 for null) and the distinct values they index.

    Equal codes <=> equal strings, which the checks rely on. dictionary_encode and unify_dictionaries
    (several chunks) give one dictionary of distinct values for all chunks; a single chunk read
    dictionary-coded keeps its own dictionary, in which a value given twice is folded.
    """
    if isinstance(column, pa.Array):
        column = pa.chunked_array([column])
    if column.num_chunks == 0 or column.null_count == len(column):
        # a read-only view of one -1: an all-null column (the usual split) costs no memory
        return np.broadcast_to(np.int32(-1), (len(column),)), pa.array([], type=pa.string())
    single_coded = pa.types.is_dictionary(column.type) and column.num_chunks == 1
    if pa.types.is_dictionary(column.type):
        coded = pa.table({"c": column}).unify_dictionaries()["c"] if not single_coded else column
    else:
        coded = pc.dictionary_encode(column)
    dictionary = coded.chunk(0).dictionary
    indices = pa.chunked_array([chunk.indices for chunk in coded.chunks], type=coded.type.index_type)
    codes = (indices.fill_null(-1) if indices.null_count else indices).to_numpy()
    distinct = pc.unique(dictionary) if single_coded else dictionary
    if len(distinct) < len(dictionary):
        fold = pc.index_in(dictionary, distinct).to_numpy(zero_copy_only=False).astype(np.int64)
        codes = np.where(codes >= 0, fold[codes], -1)
        dictionary = distinct
    return codes, dictionary


def _lookup(flags: np.ndarray, codes: np.ndarray, null: bool = False) -> np.ndarray | None:
    """Per-row values of per-distinct-value flags (rows with a null (-1) code get `null`); None if no row
    is flagged, which spares a pass over every row in the usual case."""
    if flags.any() or (null and codes.min(initial=0) < 0):
        return np.append(flags, null)[codes]
    return None


def _floats(column: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """(n,) float64 values (NaN where null) and the (n,) mask of non-null values."""
    n = len(column)
    if column.null_count == 0:
        return column.to_numpy(), np.broadcast_to(True, (n,))
    if column.null_count == n:  # read-only views of one value: no memory for an absent column
        return np.broadcast_to(np.nan, (n,)), np.broadcast_to(False, (n,))
    return column.fill_null(np.nan).to_numpy(), column.is_valid().to_numpy()


def _given_texts(column: pa.ChunkedArray) -> tuple[np.ndarray | None, np.ndarray]:
    """A mostly-null string column as (its values as an object array, None when no value is given; the (n,)
    mask of given values): the usual all-null case builds no millions of Python Nones."""
    if column.null_count == len(column):
        return None, np.broadcast_to(False, (len(column),))
    return column.to_numpy(zero_copy_only=False), column.is_valid().to_numpy()


class _Names:
    """Lazy access to a dictionary's strings by code, for the few rows that need a message."""

    def __init__(self, values: pa.Array) -> None:
        self.values = values

    def __getitem__(self, code: int) -> str | None:
        return self.values[int(code)].as_py()

    def __iter__(self) -> Iterator[str | None]:
        return iter(self.values.to_pylist())


def _number_text(value: float) -> str:
    """A float as the reasons print it (repr: 1.5, 1e+308, inf)."""
    return "null" if value is None or (isinstance(value, float) and math.isnan(value)) else repr(float(value))


def _first_index(codes: np.ndarray, rows: np.ndarray, size: int) -> np.ndarray:
    """(size,) the first of `rows` (ascending staged indices) carrying each code; len(codes) where none."""
    first = np.full(size, len(codes), dtype=np.int64)
    np.minimum.at(first, codes[rows], rows)
    return first


def _present(codes: np.ndarray, size: int) -> np.ndarray:
    """The distinct non-negative codes, ascending (a counting pass: codes index a dictionary of `size`)."""
    return np.flatnonzero(np.bincount(codes, minlength=size)) if len(codes) else np.zeros(0, dtype=np.int64)


def _repeats(keys: np.ndarray, key_range: int) -> tuple[np.ndarray, np.ndarray]:
    """For (n,) int64 keys in [0, key_range), in staged order: the positions of rows whose key appeared on an
    earlier row, and the position of that first row for each (both empty in the usual case)."""
    none = np.zeros(0, dtype=np.int64)
    n = len(keys)
    if n == 0 or (key_range <= 4 * n + 1024 and np.bincount(keys, minlength=key_range).max() <= 1):
        return none, none  # the usual case, found by counting instead of sorting
    order = np.argsort(keys, kind="stable")  # equal keys stay in staged order
    ordered = keys[order]
    starts = np.r_[True, ordered[1:] != ordered[:-1]]
    if starts.all():
        return none, none
    group_first = order[np.maximum.accumulate(np.where(starts, np.arange(n), 0))]
    later = order[~starts]
    earlier = group_first[~starts]
    by_row = np.argsort(later)
    return later[by_row], earlier[by_row]


def checked_rows(rows: pa.Table, per_model: bool = False) -> Checked:
    """Check staged rows on their own and within their file; every rejected row gets a precise reason.

    `per_model`: an input row holds several models' results (wide formats), so reasons name the model.
    """
    n = rows.num_rows
    row_number = rows["row_number"].to_numpy()
    pid, pid_values = _codes(rows["prompt_id"])
    mid, mid_values = _codes(rows["model"])
    tid, text_values = _codes(rows["prompt"])
    sid, split_values = _codes(rows["split"])
    score, score_given = _floats(rows["score"])
    cost, cost_given = _floats(rows["cost"])
    raw_score, _ = _floats(rows["raw_score"])
    score_text, score_unreadable = _given_texts(rows["score_text"])
    cost_text, cost_unreadable = _given_texts(rows["cost_text"])
    pre_reason, pre_given = _given_texts(rows["pre_reason"])

    reason: dict[int, str] = {}  # staged index -> the first problem found on that row
    open_rows = np.ones(n, dtype=bool)  # no problem found yet

    def flag(mask: np.ndarray, message: Any) -> None:
        """Give rows in `mask` without a reason yet the reason message(i) (the first problem wins)."""
        if mask is None or not mask.any():
            return
        hit = np.flatnonzero(mask & open_rows)
        if len(hit):
            reason.update((int(i), message(i)) for i in hit)
            open_rows[hit] = False

    def each_value(values: pa.Array, test: Any) -> np.ndarray:
        return test(values).fill_null(False).to_numpy(zero_copy_only=False)

    flag(pre_given, lambda i: pre_reason[i])
    pid_text = _Names(pid_values)
    mid_text = _Names(mid_values)
    flag(_lookup(each_value(pid_values, lambda v: pc.equal(v, "")), pid, null=True), lambda i: "empty prompt_id")
    flag(_lookup(each_value(mid_values, lambda v: pc.equal(v, "")), mid, null=True), lambda i: "empty model name")
    identifiers = ((pid, pid_values, pid_text, "prompt_id"), (mid, mid_values, mid_text, "model name"))
    for codes, values, text, what in identifiers:
        padded = each_value(values, lambda v: pc.not_equal(pc.utf8_trim(v, BLANK), v))
        flag(_lookup(padded, codes), lambda i, c=codes, t=text, w=what: (
            f"{w} {json.dumps(t[c[i]])} has leading or trailing whitespace"))
    for codes, values, text, what in identifiers:
        formula = each_value(values, lambda v: pc.match_substring_regex(v, FORMULA_START))
        flag(_lookup(formula, codes), lambda i, c=codes, t=text, w=what: (
            f"{w} {json.dumps(t[c[i]])} starts like a spreadsheet formula"))
    blank_text = each_value(text_values, lambda v: pc.equal(pc.utf8_trim(v, BLANK), ""))
    flag(_lookup(blank_text, tid, null=True), lambda i: "empty prompt text")
    with np.errstate(invalid="ignore"):
        # One pass finds whether any score or cost needs a closer look (NaN fails every comparison).
        if not ((score >= 0) & (score <= 1)).all():
            flag(score_unreadable, lambda i: f"score {json.dumps(score_text[i])} is not a number")
            flag(~score_given, lambda i: "score is missing")
            flag(score_given & np.isnan(score), lambda i: "score NaN is not a number in [0, 1]")
            flag((score < 0) | (score > 1), lambda i: f"score {_number_text(score[i])} is outside [0, 1]")
        if not ((cost >= 0) & (cost < np.inf) | ~(cost_given | cost_unreadable)).all():
            flag(cost_unreadable, lambda i: f"cost {json.dumps(cost_text[i])} is not a number")
            flag(cost_given & np.isnan(cost), lambda i: "cost NaN is not a number (leave it empty for no cost)")
            flag(np.isinf(cost), lambda i: f"cost {_number_text(cost[i])} is not finite")
            flag(cost < 0, lambda i: f"cost {_number_text(cost[i])} is negative")
    split_text = _Names(split_values)
    bad_split = np.array([value not in SPLITS for value in split_text], dtype=bool)
    flag(_lookup(bad_split, sid), lambda i: f"split {json.dumps(split_text[sid[i]])} is not train, val or test")

    # Within the file, a prompt's first valid row fixes its text and split; later rows must agree.
    valid = np.flatnonzero(open_rows)
    first = _first_index(pid, valid, len(pid_values))  # (n_prompt_ids,) staged index of each id's first row
    anchor = first[np.where(pid >= 0, pid, 0)]  # (n,) that row, for every row
    anchored = open_rows & (pid >= 0)
    flag(anchored & (tid != tid[np.minimum(anchor, n - 1)]), lambda i: (
        f"prompt_id {json.dumps(pid_text[pid[i]])} was given a different text on row {row_number[anchor[i]]}"))
    if len(split_values) > 1 or (len(split_values) == 1 and sid.min() < 0):  # else every row has the same split
        flag(anchored & (sid != sid[np.minimum(anchor, n - 1)]), lambda i: (
            f"prompt_id {json.dumps(pid_text[pid[i]])} has split "
            f"{json.dumps(split_text[sid[i]] if sid[i] >= 0 else None)} here but "
            f"{json.dumps(split_text[sid[anchor[i]]] if sid[anchor[i]] >= 0 else None)} "
            f"on row {row_number[anchor[i]]}"))

    # A (prompt_id, model) given twice: an identical repeat is dropped, a different result quarantined.
    consistent = _positions(open_rows)
    keys = pid[consistent].astype(np.int64) * max(len(mid_values), 1) + mid[consistent]
    later, earlier = _repeats(keys, len(pid_values) * max(len(mid_values), 1))
    if not isinstance(consistent, slice):
        later, earlier = consistent[later], consistent[earlier]
    same = (score[later] == score[earlier]) & _same(cost[later], cost[earlier]) & _same(
        raw_score[later], raw_score[earlier])
    duplicates = int(same.sum())
    open_rows[later[same]] = False
    conflicting = np.zeros(n, dtype=bool)
    conflicting[later[~same]] = True
    earlier_of = dict(zip(later.tolist(), earlier.tolist(), strict=True))
    flag(conflicting, lambda i: (
        f"duplicate of ({json.dumps(pid_text[pid[i]])}, {json.dumps(mid_text[mid[i]])}) on row "
        f"{row_number[earlier_of[i]]} with a different result: {_result_text(score, raw_score, cost, earlier_of[i])}"
        f" there, {_result_text(score, raw_score, cost, i)} here"))

    keep = _positions(open_rows)
    mids = _present(mid[keep], len(mid_values))
    return Checked(
        candidates=pa.table({
            "row_number": row_number[keep],
            "pid": pid[keep].astype(np.int32, copy=False),
            "mid": mid[keep].astype(np.int32, copy=False),
            "score": score[keep],
            "cost": _nullable(cost[keep]),
            "raw_score": _nullable(raw_score[keep]) if rows["raw_score"].null_count < n
            else pa.nulls(len(row_number[keep]), pa.float64()),
        }),
        prompts=_prompt_table(rows, pid, pid_values, tid, text_values, first, keep),
        models=pa.table({"mid": mids.astype(np.int32), "model": mid_values.take(pa.array(mids))}),
        rejects=_reject_table(rows, reason, row_number, per_model),
        duplicates=duplicates,
    )


def _positions(mask: np.ndarray) -> np.ndarray | slice:
    """The indices where mask is true, or a whole slice when it is true everywhere (no copy of every row)."""
    return slice(None) if mask.all() else np.flatnonzero(mask)


def _nullable(values: np.ndarray) -> pa.Array:
    """A float64 array with null where NaN."""
    missing = np.isnan(values)
    return pa.array(values, mask=missing) if missing.any() else pa.array(values)


def _same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Element-wise equality where two nulls (NaN) are equal."""
    return (a == b) | (np.isnan(a) & np.isnan(b))


def _result_text(score: np.ndarray, raw_score: np.ndarray, cost: np.ndarray, i: int) -> str:
    """A result as the reasons print it: score (and the published value it came from) and cost."""
    published = "" if math.isnan(raw_score[i]) else f" (published {_number_text(raw_score[i])})"
    return f"score {_number_text(score[i])}{published} cost {_number_text(cost[i])}"


def _prompt_table(rows: pa.Table, pid: np.ndarray, pid_values: pa.Array, tid: np.ndarray, text_values: pa.Array,
                  first: np.ndarray, keep: np.ndarray) -> pa.Table:
    """The prompts of the kept rows, with the text, benchmark, split and key of each prompt's first row."""
    pids = _present(pid[keep], len(pid_values))
    at = pa.array(first[pids])  # staged index of each kept prompt's first row
    return pa.table({
        "pid": pids.astype(np.int32),
        "prompt_id": pid_values.take(pa.array(pids)),
        "text": text_values.take(pa.array(tid[first[pids]])),
        "benchmark": rows["benchmark"].take(at).cast(pa.string()),
        "split": rows["split"].take(at).cast(pa.string()),
        "sample_key": rows["sample_key"].take(at).cast(pa.string()),
    })


def _reject_table(rows: pa.Table, reason: dict[int, str], row_number: np.ndarray, per_model: bool) -> pa.Table:
    """One row per rejected staged row: its input row number, the reason (naming the model where an input
    row holds several models' results) and the input as JSON."""
    bad = np.array(sorted(reason), dtype=np.int64)
    picked = rows.take(pa.array(bad)).to_pylist() if len(bad) else []
    reasons = [
        # a problem found while parsing concerns the whole input row, not one model's result
        f"model {json.dumps(item['model'])}: {reason[i]}"
        if per_model and item["model"] is not None and item["pre_reason"] is None else reason[i]
        for i, item in zip(bad.tolist(), picked, strict=True)
    ]
    raws = []
    for item in picked:
        if item["raw"] is not None:
            raws.append(item["raw"])
            continue
        score = item["score_text"] if item["score_text"] is not None else item["score"]
        cost = item["cost_text"] if item["cost_text"] is not None else item["cost"]
        raws.append(json.dumps({
            "prompt_id": item["prompt_id"], "model": item["model"],
            "score": item["raw_score"] if item["raw_score"] is not None else score, "cost": cost,
            "split": item["split"], "prompt": None if item["prompt"] is None else item["prompt"][:120],
        }, default=str))
    return pa.table({
        "row_number": pa.array(row_number[bad], pa.int64()),
        "reason": pa.array(reasons, pa.string()),
        "raw": pa.array(raws, pa.string()),
    })


# ---------------------------------------------------------------------------------------------- writing


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


def _cross_file_merges(con: Any, rows: pa.Table) -> list[_Merge]:
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


def _rows_pointed_at_stored(rows: pa.Table, merges: Sequence[_Merge]) -> pa.Table:
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


def _progress(path: Path, size: int, enabled: bool) -> tqdm:
    """A progress bar over the ingestion stages, shown for large files only."""
    return tqdm(
        total=len(STAGES), desc=path.name, unit="stage", disable=not enabled or size < LARGE_FILE_BYTES,
        file=sys.stderr, leave=False,
    )


def ingest_file(db_path: Path, path: Path, split: str | None = None, progress: bool = True) -> IngestSummary:
    """Ingest one file in one transaction: all its good rows and its quarantine, or nothing."""
    path = Path(path)
    if split is not None and split not in SPLITS:
        raise IngestError(f"split must be one of {list(SPLITS)}, not {split!r}")
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    started = time.perf_counter()
    try:
        size = path.stat().st_size
        file_hash = file_sha256(path)
    except IsADirectoryError as exc:
        raise IngestError(f"{path}: a directory, not a file") from exc
    except PermissionError as exc:
        raise IngestError(f"{path}: cannot read the file: {exc.strerror}") from exc
    source = str(path.resolve())
    with store.opened(db_path) as con:
        seen = store.query(con, "ingest_file_seen", file_hash=file_hash)
        if len(seen):
            log.info("%s: skipped, the same content was ingested from %s", path, seen.path.iloc[0])
            return IngestSummary(source, file_hash, str(seen.format.iloc[0]), "skipped",
                                 seconds=round(time.perf_counter() - started, 3))
        with _progress(path, size, progress) as bar:
            bar.set_postfix_str(STAGES[0])
            staged = staged_file(path, split)
            log.info("%s: read %d rows as %s, %d staged results", path, staged.rows_read, staged.format,
                     staged.rows.num_rows)
            bar.update()
            # Read-only work before the transaction: this process holds DuckDB's only write lock, so the
            # store cannot change meanwhile, and the transaction stays short.
            merges = _cross_file_merges(con, staged.rows) if staged.format == FORMAT_ROUTERBENCH else []
            bar.set_postfix_str(STAGES[1])
            checked = checked_rows(_rows_pointed_at_stored(staged.rows, merges), staged.per_model)
            bar.update()
            bar.set_postfix_str(STAGES[2])
            # Relations are registered outside the transaction, so that a failure inside it rolls back and
            # surfaces as itself (unregistering in an aborted transaction would raise over it).
            with contextlib.ExitStack() as relations, store.transaction(con):
                for name, table in (("ingest_candidates", checked.candidates), ("ingest_prompts", checked.prompts),
                                    ("ingest_models", checked.models), ("ingest_rejects", checked.rejects)):
                    relations.enter_context(store.registered(con, name, table))
                log.info("%s: transaction started, checking %d rows against the store", path,
                         checked.candidates.num_rows)
                for statement in CHECK_STATEMENTS:
                    store.execute(con, statement)
                counts = store.query(con, "ingest_counts").iloc[0]
                landed = tuple(store.query(con, "ingest_landed_models").model.tolist())
                bar.update()
                bar.set_postfix_str(STAGES[3])
                log.info("%s: writing", path)
                moved = sum(_merged_into_staged(con, merge, path) for merge in merges if merge.staged_is_main)
                now = datetime.now()
                write = {"source_file": source, "now": now}
                store.execute(con, "ingest_insert_models", now=now)
                store.execute(con, "ingest_insert_prompts", **write)
                store.execute(con, "ingest_insert_results", file_hash=file_hash, **write)
                store.execute(con, "ingest_insert_quarantine", file_hash=file_hash, **write)
                store.execute(con, "ingest_insert_keys", key_kind=ROUTERBENCH_KEY_KIND, file_hash=file_hash, now=now)
                summary = IngestSummary(
                    path=source,
                    file_hash=file_hash,
                    format=staged.format,
                    status="ingested",
                    rows_read=staged.rows_read,
                    rows_accepted=int(counts.rows_accepted),
                    rows_duplicate=checked.duplicates + int(counts.rows_stored),
                    rows_quarantined=int(counts.rows_quarantined),
                    new_prompts=int(counts.new_prompts) - moved,
                    new_models=int(counts.new_models),
                    merged_prompts=sum(not merge.staged_is_main for merge in merges) + moved,
                    landed_models=landed,
                    ignored_columns=staged.ignored_columns,
                )
                store.execute(
                    con, "ingest_insert_file", file_hash=file_hash, path=source, format=staged.format,
                    rows_accepted=summary.rows_accepted, rows_quarantined=summary.rows_quarantined,
                    new_prompts=summary.new_prompts, new_models=summary.new_models, now=now,
                )
                log.info("%s: committing", path)
            bar.update()
    summary = replace(summary, seconds=round(time.perf_counter() - started, 3))
    log.info("%s", summary.line())
    return summary


def _merged_into_staged(con: Any, merge: _Merge, path: Path) -> bool:
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


def set_default_cost(db_path: Path, model: str, cost: float) -> None:
    """Set a model's default cost (used where its results carry none); the model must be in the store."""
    if isinstance(cost, bool) or not isinstance(cost, int | float) or not math.isfinite(cost) or cost < 0:
        raise IngestError(f"the cost of {model!r} must be a finite number >= 0, not {cost!r}")
    with store.opened(db_path) as con:
        known = store.query(con, "ingest_model_names").model.tolist()
        if model not in known:
            close = difflib.get_close_matches(model, known, n=3)
            hint = f"; did you mean {close}?" if close else f" ({len(known)} models known)"
            raise IngestError(f"unknown model {model!r}: ingest its results first{hint}")
        with store.transaction(con):
            store.execute(con, "ingest_set_default_cost", model=model, cost=float(cost))


# ---------------------------------------------------------------------------------------------- inbox

# Files still being written should carry one of these suffixes and be renamed when complete.
PARTIAL_SUFFIXES = (".part", ".partial", ".tmp", ".crdownload")
REASON_SUFFIX = ".reason.txt"


def inbox_files(inbox_dir: Path) -> list[Path]:
    """The files waiting in the inbox (not hidden, not partial), by name."""
    return sorted(
        p for p in Path(inbox_dir).iterdir()
        if p.is_file() and not p.name.startswith(".") and not p.name.endswith(PARTIAL_SUFFIXES)
    )


def _moved(path: Path, folder: Path) -> Path:
    """Move a file into a folder without overwriting an earlier file of the same name; the new path."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / path.name
    counter = 1
    while target.exists():
        target = folder / f"{path.stem}.{counter}{path.suffix}"
        counter += 1
    shutil.move(str(path), str(target))
    return target


def process_inbox(db_path: Path, inbox_dir: Path, split: str | None = None,
                  progress: bool = False) -> list[InboxOutcome]:
    """Ingest every file waiting in the inbox; move each to done/, or to failed/ with the reason beside it."""
    inbox_dir = Path(inbox_dir)
    inbox_dir.mkdir(parents=True, exist_ok=True)
    outcomes: list[InboxOutcome] = []
    for path in inbox_files(inbox_dir):
        try:
            summary = ingest_file(db_path, path, split=split, progress=progress)
        except IngestError as exc:
            target = _moved(path, inbox_dir / "failed")
            target.with_name(target.name + REASON_SUFFIX).write_text(f"{exc}\n")
            log.warning("%s -> %s: %s", path.name, target, exc)
            outcomes.append(InboxOutcome(path.name, "failed", str(target), None, str(exc)))
            continue
        target = _moved(path, inbox_dir / "done")
        outcomes.append(InboxOutcome(path.name, summary.status, str(target), summary, None))
    return outcomes
