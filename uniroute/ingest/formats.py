"""Which format a file is, from its content, and the reader that stages it."""

from __future__ import annotations

import logging
from pathlib import Path

from uniroute.ingest.long import (
    FORMAT_LONG_CSV,
    FORMAT_LONG_JSONL,
    FORMAT_LONG_PARQUET,
    long_csv,
    long_jsonl,
    long_parquet,
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
        return FORMAT_ROUTERDC
    if stripped.startswith("{"):
        return FORMAT_LONG_JSONL
    header = csv_header(path, text)
    if any(name.endswith(WIDE_COST_SUFFIX) for name in header):
        return FORMAT_ROUTERBENCH
    return FORMAT_LONG_CSV


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
        return long_parquet(path, split)
    text = None
    if not head.startswith((b"\x1f\x8b", b"PK\x03\x04")):
        text = decoded_text(path, path.read_bytes())
        if not text.strip():
            raise IngestError(f"{path}: the file is empty (only whitespace)")
        if "\x00" in text:
            raise IngestError(f"{path}: a binary file (NUL bytes at offset {text.index(chr(0))}), not CSV or JSON")
    fmt = detect_format(path, head, text)
    assert text is not None
    readers = {
        FORMAT_LONG_CSV: long_csv,
        FORMAT_LONG_JSONL: long_jsonl,
        FORMAT_ROUTERBENCH: routerbench_csv,
        FORMAT_ROUTERDC: routerdc_json,
    }
    return readers[fmt](path, text, split)
