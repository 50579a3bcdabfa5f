"""A prompt's first row in the file fixes its text and split, also when the file is read in blocks.

Read whole, a row that gives a prompt another text than the prompt's first row is quarantined and the rows that
agree with the first are kept. Read in blocks, a prompt's rows can fall in two blocks: its first row's text is then
already stored by an earlier block, and the later block's checks took that block's own first row as the anchor. A
conflicting row first in the later block quarantined the block's agreeing rows, which a whole-file read keeps. Before a
later block is checked, its rows that disagree with what an earlier block of the same file stored for their prompt get
that reason, so they cannot anchor the block: the same rows are kept and quarantined as when the file is read whole.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from uniroute import store


def anchored_to_earlier_blocks(con: Any, rows: pa.Table, source: str, now: datetime) -> pa.Table:
    """rows (a later block's staged rows) with a pre_reason for each row that disagrees with the text or split an
    earlier block of this file stored for its prompt (source and now identify what this file wrote)."""
    open_rows = pc.is_null(rows["pre_reason"])
    index = pa.array(np.arange(rows.num_rows, dtype=np.int64))
    block = pa.table({"idx": index, "prompt_id": rows["prompt_id"], "prompt": rows["prompt"],
                      "split": rows["split"]}).filter(open_rows)
    # Arrow may hand the prompt column dictionary-coded (Parquet): DuckDB compares its values either way.
    with store.copied(con, "ingest_block_rows", block):
        found = store.query(con, "ingest_block_anchors", source_file=source, now=now)
    if found.empty:
        return rows
    reasons = np.array(rows["pre_reason"].to_pylist(), dtype=object)
    ids = rows["prompt_id"]
    splits = rows["split"]
    for idx, other_text, stored_split in found.itertuples(index=False):
        prompt_id = json.dumps(ids[int(idx)].as_py())
        if other_text:
            reasons[idx] = f"prompt_id {prompt_id} was given a different text on an earlier row"
        else:
            here = splits[int(idx)].as_py()
            stored = None if stored_split is None or stored_split != stored_split else stored_split
            reasons[idx] = f"prompt_id {prompt_id} has split {json.dumps(here)} here but {json.dumps(stored)} on an " \
                           "earlier row"
    position = rows.schema.get_field_index("pre_reason")
    return rows.set_column(position, "pre_reason", pa.array(reasons, type=pa.string()))
