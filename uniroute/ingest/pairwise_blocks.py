"""A large pairwise file read in blocks of battles, so ingest memory follows a block, not the file.

CSV by Arrow's streaming reader (only the columns the reader uses), Parquet by its batches, JSON lines by lines and
a JSON list entry by entry (uniroute/ingest/json_stream.py). Which columns a JSON file has is a fact of the whole
file (a column only later lines give still counts, the prompt id column is prompt_id if any line has one), so a
JSON file is read twice: once for its keys, then staged block by block with them. Each block's battles keep the
file's row numbers, so every quarantine reason names the file's row, as when the file is read whole.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from uniroute.ingest.formats import one_line_errors
from uniroute.ingest.json_stream import entry_blocks
from uniroute.ingest.long import parsed_lines
from uniroute.ingest.pairwise import (
    FORMAT_PAIRWISE_CSV,
    FORMAT_PAIRWISE_JSON,
    FORMAT_PAIRWISE_JSONL,
    StagedPairs,
    pairwise_csv_rows,
    pairwise_entries,
    pairwise_id_column,
    pairwise_parquet_rows,
    pairwise_records,
    pairwise_wanted,
)
from uniroute.ingest.staging import IngestError, csv_header, csv_options


def pairwise_blocks(path: Path, fmt: str, head: str | None, split: str | None, sizes: dict[str, int]
                    ) -> Iterator[StagedPairs]:
    """The staged blocks of a large pairwise file of format fmt (head: its first text, None for Parquet); sizes
    holds read_bytes, chunk_bytes, block_bytes and block_rows."""
    if head is None:
        return _parquet_blocks(path, split, sizes["block_rows"])
    if fmt == FORMAT_PAIRWISE_CSV:
        header = csv_header(path, head)
        return _csv_blocks(path, header, pairwise_id_column(path, header), split, sizes)
    if fmt == FORMAT_PAIRWISE_JSONL:
        return _jsonl_blocks(path, split, sizes)
    assert fmt == FORMAT_PAIRWISE_JSON
    return _json_blocks(path, split, sizes)


def _csv_blocks(path: Path, header: list[str], id_column: str, split: str | None, sizes: dict[str, int]
                ) -> Iterator[StagedPairs]:
    options = csv_options(header, sizes["read_bytes"])
    options["convert_options"].include_columns = pairwise_wanted(header, id_column)
    first, group, size = 1, [], 0
    with one_line_errors(path):
        try:
            for batch in itertools.chain(pa_csv.open_csv(path, **options), [None]):
                if batch is not None and batch.num_rows:
                    group.append(batch)
                    size += batch.nbytes
                if group and (size >= sizes["block_bytes"] or batch is None):
                    table = pa.Table.from_batches(group)
                    yield pairwise_csv_rows(path, header, id_column, table.to_pandas(), split, first)
                    first += table.num_rows
                    group, size = [], 0
        except pa.ArrowInvalid as exc:
            raise IngestError(f"{path}: not readable as CSV (truncated or malformed?) after data row "
                              f"{first - 1 + sum(b.num_rows for b in group)}: {exc}") from exc
    if first == 1:
        raise IngestError(f"{path}: no data rows (only a header)")


def _parquet_blocks(path: Path, split: str | None, block_rows: int) -> Iterator[StagedPairs]:
    first = 1
    with one_line_errors(path):
        try:
            names = pq.ParquetFile(path).schema_arrow.names
            id_column = pairwise_id_column(path, names)
            reader = pq.ParquetFile(path).iter_batches(batch_size=block_rows, columns=pairwise_wanted(names, id_column))
            for batch in reader:
                if batch.num_rows:
                    yield pairwise_parquet_rows(path, names, id_column, pa.Table.from_batches([batch]), split, first)
                    first += batch.num_rows
        except (pa.ArrowException, OSError) as exc:
            raise IngestError(f"{path}: not a readable Parquet file (truncated?) after row {first - 1}: {exc}") \
                from exc
    if first == 1:
        raise IngestError(f"{path}: no data rows")


def _line_blocks(path: Path, sizes: dict[str, int]) -> Iterator[tuple[list[str], int]]:
    """(non-blank lines, the first one's number) in blocks of block_bytes of text or block_rows lines."""
    first, block, size = 1, [], 0
    with open(path, encoding="utf-8-sig", newline="\n") as handle:
        for line in itertools.chain(handle, [""]):  # "" ends the last block
            if line.strip():
                block.append(line)
                size += len(line)
            if block and (size >= sizes["block_bytes"] or len(block) >= sizes["block_rows"] or not line):
                yield block, first
                first += len(block)
                block, size = [], 0


def _jsonl_blocks(path: Path, split: str | None, sizes: dict[str, int]) -> Iterator[StagedPairs]:
    with one_line_errors(path):
        found: dict[str, None] = {}
        for lines, first in _line_blocks(path, sizes):
            records, _, _ = parsed_lines(path, lines, first)
            found.update(dict.fromkeys(key for record in records for key in record))
        pairwise_id_column(path, list(found))  # a missing column fails the file before any block is written
        for lines, first in _line_blocks(path, sizes):
            records, problems, raws = parsed_lines(path, lines, first)
            yield pairwise_records(path, FORMAT_PAIRWISE_JSONL, records, problems, raws, split, first, list(found))


def _json_blocks(path: Path, split: str | None, sizes: dict[str, int]) -> Iterator[StagedPairs]:
    with one_line_errors(path):
        found: dict[str, None] = {}
        entries_read = 0
        for entries, _ in entry_blocks(path, sizes["chunk_bytes"], sizes["block_bytes"], sizes["block_rows"]):
            entries_read += len(entries)
            found.update(dict.fromkeys(key for entry in entries if isinstance(entry, dict) for key in entry))
        if not entries_read:
            raise IngestError(f"{path}: pairwise JSON must be a non-empty list of objects")
        pairwise_id_column(path, list(found))
        for entries, first in entry_blocks(path, sizes["chunk_bytes"], sizes["block_bytes"], sizes["block_rows"]):
            yield pairwise_entries(path, entries, split, first, list(found))
