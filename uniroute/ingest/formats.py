"""Which format a file is, from its content, and the reader that stages it."""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import cast

import pyarrow as pa

from uniroute.ingest.long import (
    FORMAT_LONG_CSV,
    FORMAT_LONG_JSONL,
    FORMAT_LONG_PARQUET,
    long_csv,
    long_jsonl,
    long_parquet,
)
from uniroute.ingest.pairwise import (
    FORMAT_PAIRWISE_CSV,
    FORMAT_PAIRWISE_JSON,
    FORMAT_PAIRWISE_JSONL,
    PAIRWISE_FORMATS,
    StagedPairs,
    looks_pairwise,
    pairwise_csv,
    pairwise_json,
    pairwise_jsonl,
    pairwise_parquet,
)
from uniroute.ingest.routerbench import FORMAT_ROUTERBENCH, WIDE_COST_SUFFIX, routerbench_csv
from uniroute.ingest.routerdc import FORMAT_ROUTERDC, routerdc_json
from uniroute.ingest.staging import (
    IngestError,
    Staged,
    csv_header,
    decoded_text,
)

log = logging.getLogger(__name__)

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
        return FORMAT_PAIRWISE_JSON if _first_object_is_pairwise(stripped[1:]) else FORMAT_ROUTERDC
    if stripped.startswith("{"):
        return FORMAT_PAIRWISE_JSONL if _first_object_is_pairwise(stripped) else FORMAT_LONG_JSONL
    header = csv_header(path, text)
    if any(name.endswith(WIDE_COST_SUFFIX) for name in header):
        return FORMAT_ROUTERBENCH
    if looks_pairwise(header):
        return FORMAT_PAIRWISE_CSV
    return FORMAT_LONG_CSV


def _first_object_is_pairwise(text: str) -> bool:
    """Whether the first JSON object of the text names model_a and model_b (a pairwise record)."""
    try:
        first, _ = json.JSONDecoder().raw_decode(text.lstrip())
    except json.JSONDecodeError:
        return False  # the format's own reader reports the broken JSON, naming the line
    return isinstance(first, dict) and looks_pairwise(list(first))


def staged_file(path: Path, split: str | None = None) -> Staged | StagedPairs:
    """Parse a file of any supported format (detected by content) into staged rows; IngestError if unusable."""
    path = Path(path)
    with one_line_errors(path):
        return _staged(path, split)


@contextlib.contextmanager
def one_line_errors(path: Path) -> Iterator[None]:
    """What a reader's parser raises on hostile or odd content (a JSON nesting bomb, a lone surrogate that cannot be
    UTF-8, a Parquet column of lists where text belongs) becomes one line naming the file, never a traceback."""
    try:
        yield
    except RecursionError:
        raise IngestError(f"{path}: JSON nested too deeply to be a log (an array or object inside another "
                          "about a thousand times)") from None
    except UnicodeError as exc:
        err = cast(UnicodeDecodeError, exc)  # a codec's error, decoding or encoding: both carry these fields
        raise IngestError(f"{path}: text that cannot be UTF-8 ({err.reason}, e.g. a lone surrogate "
                          f"{err.object[err.start:err.end]!r}): fix or drop those characters") from None
    except pa.ArrowException as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise IngestError(f"{path}: a column holds values of the wrong type, e.g. lists or structs where text or "
                          f"numbers belong ({first})") from None


def _staged(path: Path, split: str | None) -> Staged | StagedPairs:
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
        return pairwise_parquet(path, split) if _pairwise_parquet(path) else long_parquet(path, split)
    text = None
    if not head.startswith((b"\x1f\x8b", b"PK\x03\x04")):
        text = decoded_text(path, path.read_bytes())
        if not text.strip():
            raise IngestError(f"{path}: the file is empty (only whitespace)")
        if "\x00" in text:
            raise IngestError(f"{path}: a binary file (NUL bytes at offset {text.index(chr(0))}), not CSV or JSON")
    fmt = detect_format(path, head, text)
    assert text is not None
    readers: dict[str, Callable[[Path, str, str | None], Staged | StagedPairs]] = {
        FORMAT_LONG_CSV: long_csv,
        FORMAT_LONG_JSONL: long_jsonl,
        FORMAT_ROUTERBENCH: routerbench_csv,
        FORMAT_ROUTERDC: routerdc_json,
        FORMAT_PAIRWISE_CSV: pairwise_csv,
        FORMAT_PAIRWISE_JSONL: pairwise_jsonl,
        FORMAT_PAIRWISE_JSON: pairwise_json,
    }
    return readers[fmt](path, text, split)


def _pairwise_parquet(path: Path) -> bool:
    """Whether a Parquet file's columns are those of pairwise preferences (an unreadable one is not)."""
    import pyarrow.parquet as pq

    try:
        return looks_pairwise(pq.ParquetFile(path).schema_arrow.names)
    except (pa.ArrowException, OSError):
        return False  # long_parquet reports the unreadable file


def is_pairwise_file(path: Path) -> bool:
    """Whether a file holds pairwise preferences, by content (False for anything unreadable: its reader says why)."""
    path = Path(path)
    try:
        with open(path, "rb") as handle:
            head = handle.read(8)
        if head.startswith(b"PAR1"):
            return _pairwise_parquet(path)
        if head.startswith((b"\x1f\x8b", b"PK\x03\x04")) or not head:
            return False
        return detect_format(path, head, decoded_text(path, path.read_bytes())) in PAIRWISE_FORMATS
    except (OSError, IngestError):
        return False
