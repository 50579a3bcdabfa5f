"""A large RouterBench wide CSV read in blocks of rows, so ingest memory follows a block, not the file.

The wide reader merges the rows of one prompt that RouterBench split over several rows with the same sample_id
(routerbench._merge_split_rows); those rows need not be adjacent (the shared arc_challenge_train.csv pairs row 75
with a later one). A first streaming pass reads the sample_id column alone and finds where each repeated
sample_id starts and ends; blocks are then cut only between rows that no such group spans, so every block holds
all the rows of each of its sample_ids and is staged exactly as the whole file would stage those rows. A file whose
groups span it all is one block, as when it was read whole. Only the columns the reader uses are read: the
`|model_response` columns, most of a RouterBench file, are parsed (a row of the wrong width is still refused) but
never kept.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

from uniroute.ingest.formats import one_line_errors
from uniroute.ingest.routerbench import routerbench_models, routerbench_rows, routerbench_wanted
from uniroute.ingest.staging import IngestError, Staged, csv_options


def wide_blocks(path: Path, header: list[str], split: str | None, read_bytes: int, block_bytes: int
                ) -> Iterator[Staged]:
    """The staged blocks of a RouterBench wide CSV (header already read): at least block_bytes of parsed cells
    each, cut only where no repeated sample_id spans the cut."""
    models = routerbench_models(path, header)
    with one_line_errors(path):
        cuttable = _cuttable(path, header, read_bytes) if "sample_id" in header else None
        first = 1
        pending: list[pa.RecordBatch] = []
        size = 0
        for batch in _batches(path, header, routerbench_wanted(header, models), read_bytes):
            if batch.num_rows:
                pending.append(batch)
                size += batch.nbytes
            if size < block_bytes:
                continue
            table = pa.Table.from_batches(pending)
            cut = _last_cut(cuttable, first, table.num_rows)
            if cut == 0:
                continue  # a sample_id group spans the whole block: read on
            yield routerbench_rows(path, header, models, table.slice(0, cut).to_pandas(), split, first)
            first += cut
            rest = table.slice(cut)
            pending, size = rest.to_batches(), rest.nbytes
        if pending:
            table = pa.Table.from_batches(pending)
            if table.num_rows:
                yield routerbench_rows(path, header, models, table.to_pandas(), split, first)
                first += table.num_rows
    if first == 1:
        raise IngestError(f"{path}: no data rows (only a header)")


def _batches(path: Path, header: list[str], columns: list[str], read_bytes: int) -> Iterator[pa.RecordBatch]:
    """The file's batches of the given columns (every cell as text); a malformed row is one line naming the
    last data row read before it."""
    options = csv_options(header, read_bytes)
    options["convert_options"].include_columns = columns
    read = 0
    try:
        for batch in pa_csv.open_csv(path, **options):
            read += batch.num_rows
            yield batch
    except pa.ArrowInvalid as exc:
        raise IngestError(f"{path}: not readable as CSV (truncated or malformed?) after data row {read}: "
                          f"{exc}") from exc


def _cuttable(path: Path, header: list[str], read_bytes: int) -> np.ndarray:
    """(n,) bool: a block may end after data row i + 1 (no repeated sample_id has rows both before and after)."""
    keys = pa.chunked_array([batch.column(0) for batch in _batches(path, header, ["sample_id"], read_bytes)],
                            pa.string())
    n = len(keys)
    stripped = pc.utf8_trim_whitespace(keys)
    table = pa.table({"key": stripped, "row": pa.array(np.arange(n, dtype=np.int64))})
    table = table.filter(pc.not_equal(table["key"], ""))
    spans = table.group_by("key").aggregate([("row", "min"), ("row", "max")])
    starts = spans["row_min"].to_numpy()
    ends = spans["row_max"].to_numpy()
    several = starts < ends
    opened = np.zeros(n + 1, dtype=np.int64)
    np.add.at(opened, starts[several], 1)
    np.add.at(opened, ends[several], -1)
    return np.cumsum(opened[:n]) == 0


def _last_cut(cuttable: np.ndarray | None, first: int, rows: int) -> int:
    """How many of the rows first.. (a block of `rows`) to stage now: the most that end where a cut is allowed."""
    if cuttable is None:
        return rows
    allowed = np.flatnonzero(cuttable[first - 1: first - 1 + rows])
    return int(allowed[-1]) + 1 if len(allowed) else 0
