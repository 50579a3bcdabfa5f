"""A large file read in blocks, so ingest memory follows a block, not the file.

A file of at most BATCH_BYTES is read whole, as before. A larger text file is first checked as UTF-8 without NUL
bytes in one streaming pass (the same one-line errors naming the offset and line). A long CSV is then read by
Arrow's streaming CSV reader, READ_BYTES at a time grouped into blocks of about BLOCK_BYTES; a long JSON-lines file
BLOCK_BYTES of lines at a time, parsed as when read whole (the same line numbers, quarantined lines, and refusals
naming the line of a nesting bomb or a lone surrogate); a long Parquet file BLOCK_ROWS rows at a time. A RouterBench
wide CSV is read in row blocks that never split a repeated sample_id (wide_blocks.py), a RouterDC JSON list entry by
entry (json_stream.py: surveyed once, staged in a second pass), and a pairwise file of any format in blocks of
battles (pairwise_blocks.py). Each block is staged with its rows' numbers in the file, so every quarantine reason
still names the file's row. ingest_file checks and writes the blocks one after the other inside one transaction, so
a file is still written whole or not at all.

A prompt whose rows fall in two blocks keeps the text and split of its first row in the file (block_anchors.py).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from uniroute.ingest.formats import detect_format, is_pairwise_file, one_line_errors
from uniroute.ingest.json_stream import entry_blocks
from uniroute.ingest.long import (
    FORMAT_LONG_CSV,
    FORMAT_LONG_JSONL,
    long_csv_columns,
    long_jsonl_records,
    long_parquet_columns,
    long_parquet_wanted,
    parsed_lines,
)
from uniroute.ingest.pairwise import FORMAT_PAIRWISE_PARQUET, PAIRWISE_FORMATS, StagedPairs
from uniroute.ingest.pairwise_blocks import pairwise_blocks
from uniroute.ingest.routerbench import FORMAT_ROUTERBENCH
from uniroute.ingest.routerdc import FORMAT_ROUTERDC, RouterdcSurvey, json_object, routerdc_rows
from uniroute.ingest.staging import (
    LONG_REQUIRED,
    IngestError,
    Staged,
    csv_header,
    csv_options,
    missing_columns_error,
)
from uniroute.ingest.wide_blocks import wide_blocks

BATCH_BYTES = 32 * 1024 * 1024  # files up to this size are read whole (every check sees the whole file at once)
BLOCK_ROWS = 65_536  # a Parquet block
BLOCK_BYTES = 8 * 1024 * 1024  # a CSV block: about 60,000 rows of a typical log
# Arrow's streaming CSV reader reads up to 32 of its blocks ahead of the one handed out: with 8 MB blocks that was
# the first 256 MB of the file, held while the first block was checked. It reads 1 MB blocks (its default, so a row
# longer than that is refused as when the file is read whole), grouped here into blocks of BLOCK_BYTES.
READ_BYTES = 1024 * 1024
CHUNK_BYTES = 4 * 1024 * 1024  # the UTF-8 pass's read size (the pass holds a few copies of one chunk)
HEAD_BYTES = 1024 * 1024  # what format detection and the header read


def checked_text_head(path: Path) -> str:
    """The file's first HEAD_BYTES as text, after checking the whole file is UTF-8 without NUL bytes, chunk by
    chunk (IngestError naming the offset and line of the first bad byte, as staging.decoded_text does)."""
    head, line, offset, carry, content = "", 1, 0, b"", False
    with open(path, "rb") as handle:
        start = handle.read(3)
        if start.startswith((b"\xff\xfe", b"\xfe\xff")):
            raise IngestError(f"{path}: the file is UTF-16 text; save it as UTF-8")
        carry = start.removeprefix(b"\xef\xbb\xbf")
        offset = len(start) - len(carry)
        while True:
            chunk = handle.read(CHUNK_BYTES)
            data = carry + chunk
            # Cut after the last newline: a newline is never inside a multi-byte character.
            cut = len(data) if not chunk else data.rfind(b"\n") + 1
            piece, carry = data[:cut], data[cut:]
            try:
                text = piece.decode("utf-8")
            except UnicodeDecodeError as exc:
                where = line + piece.count(b"\n", 0, exc.start)
                raise IngestError(f"{path}: not UTF-8 text: byte 0x{piece[exc.start]:02x} at offset "
                                  f"{offset + exc.start} (line {where}); save the file as UTF-8") from exc
            if "\x00" in text:
                raise IngestError(f"{path}: a binary file (NUL bytes at offset {offset + text.index(chr(0))}), "
                                  "not CSV or JSON")
            content = content or bool(text.strip())
            if len(head) < HEAD_BYTES:
                head += text[: HEAD_BYTES - len(head)]
            line += piece.count(b"\n")
            offset += len(piece)
            if not chunk and not carry:
                break
    if not content:
        raise IngestError(f"{path}: the file is empty (only whitespace)")
    return head


def _sizes() -> dict[str, int]:
    return {"read_bytes": READ_BYTES, "chunk_bytes": CHUNK_BYTES, "block_bytes": BLOCK_BYTES, "block_rows": BLOCK_ROWS}


def long_batches(path: Path, split: str | None) -> Iterator[Staged | StagedPairs] | None:
    """The staged blocks of a file larger than BATCH_BYTES, in any format but a compressed one (None: read
    whole)."""
    path = Path(path)
    try:
        if path.stat().st_size <= BATCH_BYTES:
            return None
        with open(path, "rb") as handle:
            head = handle.read(8)
    except OSError:
        return None  # the whole-file reader says what is wrong, in its words
    if head.startswith(b"PAR1"):
        if is_pairwise_file(path):
            return pairwise_blocks(path, FORMAT_PAIRWISE_PARQUET, None, split, _sizes())
        return _parquet_blocks(path, split)
    if head.startswith((b"\x1f\x8b", b"PK\x03\x04")):
        return None
    text = checked_text_head(path)
    fmt = detect_format(path, head, text)
    if fmt == FORMAT_LONG_JSONL:
        return _jsonl_blocks(path, split)
    if fmt in PAIRWISE_FORMATS:
        return pairwise_blocks(path, fmt, text, split, _sizes())
    if fmt == FORMAT_ROUTERDC:
        return _routerdc_blocks(path, split)
    if fmt == FORMAT_ROUTERBENCH:
        return wide_blocks(path, csv_header(path, text), split, READ_BYTES, BLOCK_BYTES)
    if fmt != FORMAT_LONG_CSV:
        return None
    header = csv_header(path, text)
    if any(name not in header for name in LONG_REQUIRED):
        raise missing_columns_error(path, header, LONG_REQUIRED, "long format")
    return _blocks(path, header, split)


def _blocks(path: Path, header: list[str], split: str | None) -> Iterator[Staged]:
    first = 1
    with one_line_errors(path):
        try:
            for table in _grouped(pa_csv.open_csv(path, **csv_options(header, READ_BYTES))):
                yield long_csv_columns(path, header, table, split, first)
                first += table.num_rows
        except pa.ArrowInvalid as exc:
            raise IngestError(f"{path}: not readable as CSV (truncated or malformed?) after data row {first - 1}: "
                              f"{exc}") from exc
    if first == 1:
        raise IngestError(f"{path}: no data rows (only a header)")


def _jsonl_blocks(path: Path, split: str | None) -> Iterator[Staged]:
    """A long JSON-lines file's blocks of non-blank lines (BLOCK_BYTES of text or BLOCK_ROWS lines), parsed as
    when it is read whole: the same line numbers, problems and one-line refusals naming the line."""
    found: dict[str, None]  # the keys seen, in order
    first, found = 1, dict.fromkeys(())
    with one_line_errors(path), open(path, encoding="utf-8-sig", newline="\n") as handle:
        block: list[str] = []
        size = 0
        for line in itertools.chain(handle, [""]):  # "" ends the last block
            if line.strip():
                block.append(line)
                size += len(line)
            if block and (size >= BLOCK_BYTES or len(block) >= BLOCK_ROWS or not line):
                records, problems, raws = parsed_lines(path, block, first)
                found.update(dict.fromkeys(key for record in records for key in record))
                yield long_jsonl_records(path, records, problems, raws, split, first)
                first += len(block)
                block, size = [], 0
    if first == 1:
        raise IngestError(f"{path}: the file is empty (only whitespace)")
    # As when read whole, a column no line gives fails the file: raised after the last block, the file's
    # transaction writes nothing.
    if any(name not in found for name in LONG_REQUIRED):
        raise missing_columns_error(path, list(found), LONG_REQUIRED, "long format")


def _routerdc_blocks(path: Path, split: str | None) -> Iterator[Staged]:
    """A RouterDC file's blocks of entries, read twice: first to survey the whole file (is it one, which kind of
    score), then to stage its entries block by block as the whole file would be staged."""
    with one_line_errors(path):
        survey = RouterdcSurvey()
        for entries, _ in entry_blocks(path, CHUNK_BYTES, BLOCK_BYTES, BLOCK_ROWS, json_object):
            survey.add(path, entries)
        survey.check(path)
        for entries, first in entry_blocks(path, CHUNK_BYTES, BLOCK_BYTES, BLOCK_ROWS, json_object):
            yield routerdc_rows(path, entries, split, survey, first)


def _grouped(reader: pa.RecordBatchReader) -> Iterator[pa.Table]:
    """The reader's batches as tables of about BLOCK_BYTES (their chunks kept, not copied)."""
    group: list[pa.RecordBatch] = []
    size = 0
    for batch in reader:
        if batch.num_rows:
            group.append(batch)
            size += batch.nbytes
        if size >= BLOCK_BYTES:
            yield pa.Table.from_batches(group)
            group, size = [], 0
    if group:
        yield pa.Table.from_batches(group)


def _parquet_blocks(path: Path, split: str | None) -> Iterator[Staged]:
    first = 1
    with one_line_errors(path):
        try:
            parquet = pq.ParquetFile(path)
            names = parquet.schema_arrow.names
            wanted, coded = long_parquet_wanted(path, parquet)
            reader = pq.ParquetFile(path, read_dictionary=coded).iter_batches(batch_size=BLOCK_ROWS, columns=wanted)
        except (pa.ArrowException, OSError) as exc:
            raise IngestError(f"{path}: not a readable Parquet file (truncated?): {exc}") from exc
        while True:
            try:
                batch = next(reader)
            except StopIteration:
                break
            except (pa.ArrowException, OSError) as exc:
                raise IngestError(f"{path}: not a readable Parquet file (truncated?) after row {first - 1}: "
                                  f"{exc}") from exc
            if batch.num_rows:
                yield long_parquet_columns(path, names, pa.Table.from_batches([batch]), split, first)
                first += batch.num_rows
    if first == 1:
        raise IngestError(f"{path}: no data rows")
