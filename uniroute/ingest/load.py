"""Loading one file into the store in one transaction: read, check rows, check against the store, write."""

from __future__ import annotations

import contextlib
import logging
import math
import os
import stat
import time
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from uniroute import store
from uniroute.faults import crashpoint
from uniroute.ingest.block_anchors import anchored_to_earlier_blocks
from uniroute.ingest.blocks import long_batches
from uniroute.ingest.checks import COST_CEILING, checked_rows
from uniroute.ingest.decisions import FORMAT_DECISIONS, load_decisions
from uniroute.ingest.formats import staged_file
from uniroute.ingest.merge import cross_file_merges, merged_into_staged, rows_pointed_at_stored
from uniroute.ingest.outcomes import FORMAT_OUTCOMES, check_size, load_outcomes
from uniroute.ingest.pairwise import StagedPairs
from uniroute.ingest.pairwise_load import load_pairs
from uniroute.ingest.prices import UNDATED, Price, record_prices
from uniroute.ingest.routerbench import FORMAT_ROUTERBENCH, ROUTERBENCH_KEY_KIND
from uniroute.ingest.staging import (
    SPLITS,
    IngestError,
    Staged,
    file_sha256,
)
from uniroute.ingest.traffic_files import traffic_format
from uniroute.progress import progress_bar

log = logging.getLogger(__name__)

LARGE_FILE_BYTES = 8 * 1024 * 1024
# DuckDB's default limit is 80% of RAM, and a file's uncommitted rows grew towards it (about 100 MB a 16 MB
# block): capped, it writes them out to the store's file before the commit instead.
INGEST_DUCKDB_MEMORY = "128MB"
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
    shared_texts: int = 0  # new prompt ids whose text another prompt id (in the file or the store) has too
    first_problem: str | None = None  # the first quarantined row and its reason, when any was quarantined
    landed_models: tuple[str, ...] = ()  # active models with new results on 'val' or unknown-split prompts
    retired_models: tuple[str, ...] = ()  # retired models the file gives results for (stored; they stay retired)
    models: tuple[str, ...] = ()  # every model the file gives a valid result for (new or already stored)
    seconds: float = 0.0
    ignored_columns: tuple[str, ...] = field(default=())
    unit: str = "results"  # what rows_accepted counts: results (pointwise) or battles (pairwise)
    rows_waiting: int = 0  # outcomes for decisions not stored yet, which land when their decisions do

    def line(self) -> str:
        """One line for a terminal."""
        name = Path(self.path).name
        if self.status == "skipped":
            return f"{name}: skipped, this content ({self.file_hash[:12]}) was ingested before"
        return (
            f"{name} [{self.format}]: {self.rows_read:,} rows read, {self.rows_accepted:,} {self.unit} accepted, "
            f"{self.rows_duplicate:,} duplicates skipped, {self.rows_quarantined:,} rows quarantined, "
            f"{self.new_prompts:,} new prompts, {self.new_models:,} new models ({self.seconds:.1f} s)"
            + (f"; {self.shared_texts:,} prompt ids share their text with another prompt id"
               if self.shared_texts else "")
            + (f"; results for retired {', '.join(self.retired_models)} stored, which stay retired "
               "(`uniroute onboard --reactivate` brings a model back)" if self.retired_models else "")
            + (f"; first quarantined: {self.first_problem} (see decision_quarantine)"
               if self.unit == "decisions" and self.first_problem else "")
            + (f"; {self.rows_waiting:,} outcomes wait for their decisions (they land when the decisions do)"
               if self.rows_waiting else "")
        )

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        out = asdict(self)
        out["landed_models"] = list(self.landed_models)
        out["retired_models"] = list(self.retired_models)
        out["models"] = list(self.models)
        out["ignored_columns"] = list(self.ignored_columns)
        return out


def _progress(path: Path, size: int, enabled: bool) -> Any:
    """A progress bar over the ingestion stages (log lines off a terminal), for large files only."""
    return progress_bar(len(STAGES), path.name, "stage", log, enabled=enabled and size >= LARGE_FILE_BYTES,
                        leave=False)


def ingest_file(
    con: store.Connection, path: Path, split: str | None = None, progress: bool = True, source: str | None = None,
    only: str | None = None,
) -> IngestSummary:
    """Ingest one file inside the caller's transaction (a store session): all its good rows and its
    quarantine, or, if anything fails, nothing once the caller rolls back. `source` is where the file is
    recorded as coming from (default: its resolved path); `only` a traffic format the caller takes and nothing
    else (the spool: FORMAT_DECISIONS), whose loader decides on the content, never a sniffed guess."""
    path = Path(path)
    if split is not None and split not in SPLITS:
        raise IngestError(f"split must be one of {list(SPLITS)}, not {split!r}")
    started = time.perf_counter()
    if only is not None:
        traffic: str | None = only
    else:
        traffic = traffic_format(path) if regular_file(path) else None
    if traffic == FORMAT_OUTCOMES:
        check_size(path, path.stat().st_size)  # before hashing or reading a file too large to take
    size, file_hash = readable_file(path)
    source = source or str(path.resolve())
    seen = store.query(con, "ingest_file_seen", file_hash=file_hash)
    if len(seen):
        log.info("%s: skipped, the same content was ingested from %s", path, seen.path.iloc[0])
        models = tuple(store.query(con, "ingest_file_models", file_hash=file_hash).model.tolist())
        return IngestSummary(source, file_hash, str(seen.format.iloc[0]), "skipped", models=models,
                             seconds=round(time.perf_counter() - started, 3))
    if traffic is not None:
        summary = _traffic_summary(con, path, traffic, source, file_hash)
        _record_file(con, summary)
        crashpoint("ingest:written")
        return replace(summary, seconds=round(time.perf_counter() - started, 3))
    with _progress(path, size, progress) as bar:
        bar.set_postfix_str(STAGES[0])
        blocks = long_batches(path, split)
        staged = next(blocks) if blocks is not None else staged_file(path, split)
        log.info("%s: read %d rows as %s, %d staged results", path, staged.rows_read, staged.format,
                 staged.rows.num_rows)
        bar.update()
        if isinstance(staged, StagedPairs):
            if blocks is None:
                summary = _pairs_summary(con, staged, source, file_hash, bar)
            else:  # a large pairwise file: each block checked against what the earlier ones wrote
                now = datetime.now()
                with store.memory_limited(con, INGEST_DUCKDB_MEMORY):
                    summary = _pairs_summary(con, staged, source, file_hash, bar, store.copied, now)
                    del staged
                    for block in blocks:
                        block = replace(block, rows=anchored_to_earlier_blocks(con, block.rows, source, now))
                        # A pairwise file's blocks are all pairwise.
                        summary = _added(summary, _pairs_summary(con, block,  # type: ignore[arg-type]
                                                                 source, file_hash, None, store.copied, now))
                        del block
            _record_file(con, summary)
            crashpoint("ingest:written")
            bar.update()
            summary = replace(summary, seconds=round(time.perf_counter() - started, 3))
            log.info("%s", summary.line())
            return summary
        now = datetime.now()
        # A large file's blocks are copied into DuckDB (store.copied): a registered frame lives until the commit.
        expose = store.registered if blocks is None else store.copied
        with store.memory_limited(con, INGEST_DUCKDB_MEMORY):
            summary = _staged_summary(con, staged, path, source, file_hash, now, bar, expose)
            del staged  # a block's rows are not kept while the next one is read
            for block in blocks or ():  # a large long file: each block checked against what the earlier ones wrote
                log.info("%s: rows %d-%d", path, block.rows.column("row_number")[0].as_py(),
                         block.rows.column("row_number")[-1].as_py())
                block = replace(block, rows=anchored_to_earlier_blocks(con, block.rows, source, now))
                # A long file's blocks are all long.
                summary = _added(summary, _staged_summary(con, block,  # type: ignore[arg-type]
                                                          path, source, file_hash, now, None, expose))
                del block
        _record_file(con, summary, now)
        crashpoint("ingest:written")
        bar.update()
    summary = replace(summary, seconds=round(time.perf_counter() - started, 3))
    log.info("%s", summary.line())
    return summary


def _staged_summary(con: store.Connection, staged: Staged, path: Path, source: str, file_hash: str,
                    now: datetime, bar: Any, expose: Any = store.registered) -> IngestSummary:
    """Check one file's (or one block's) staged rows within the file and against the store, and write them.
    `expose` makes the checked tables visible to the SQL (store.registered, or store.copied for a block)."""
    stage = bar.set_postfix_str if bar is not None else (lambda _text: None)
    advance = bar.update if bar is not None else (lambda: None)
    merges = cross_file_merges(con, staged.rows) if staged.format == FORMAT_ROUTERBENCH else []
    stage(STAGES[1])
    checked = checked_rows(rows_pointed_at_stored(staged.rows, merges), staged.per_model)
    advance()
    stage(STAGES[2])
    with contextlib.ExitStack() as relations:
        for name, table in (("ingest_candidates", checked.candidates), ("ingest_prompts", checked.prompts),
                            ("ingest_models", checked.models), ("ingest_rejects", checked.rejects)):
            relations.enter_context(expose(con, name, table))
        log.info("%s: checking %d rows against the store", path, checked.candidates.num_rows)
        for statement in CHECK_STATEMENTS:
            store.execute(con, statement)
        counts = store.query(con, "ingest_counts").iloc[0]
        first = store.query(con, "ingest_first_problem")
        landed = tuple(store.query(con, "ingest_landed_models").model.tolist())
        retired = tuple(store.query(con, "ingest_retired_models").model.tolist())
        advance()
        stage(STAGES[3])
        log.info("%s: writing", path)
        moved = sum(merged_into_staged(con, merge, path) for merge in merges if merge.staged_is_main)
        write = {"source_file": source, "now": now}
        store.execute(con, "ingest_insert_models", now=now)
        store.execute(con, "ingest_insert_prompts", **write)
        store.execute(con, "ingest_insert_results", file_hash=file_hash, **write)
        store.execute(con, "ingest_insert_quarantine", file_hash=file_hash, **write)
        store.execute(con, "ingest_insert_keys", key_kind=ROUTERBENCH_KEY_KIND, file_hash=file_hash, now=now)
        return IngestSummary(
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
            shared_texts=checked.shared_texts + int(counts.shared_texts),
            first_problem=None if first.empty else f"row {first.row_number.iloc[0]}: {first.reason.iloc[0]}",
            landed_models=landed,
            retired_models=retired,
            models=tuple(store.query(con, "ingest_given_models").model.tolist()),
            ignored_columns=staged.ignored_columns,
        )


def _added(total: IngestSummary, block: IngestSummary) -> IngestSummary:
    """A file's summary so far with one more block's counts (models in the order first seen)."""
    def union(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(dict.fromkeys((*a, *b)))

    return replace(
        total,
        rows_read=total.rows_read + block.rows_read,
        rows_accepted=total.rows_accepted + block.rows_accepted,
        rows_duplicate=total.rows_duplicate + block.rows_duplicate,
        rows_quarantined=total.rows_quarantined + block.rows_quarantined,
        new_prompts=total.new_prompts + block.new_prompts,
        new_models=total.new_models + block.new_models,
        merged_prompts=total.merged_prompts + block.merged_prompts,
        shared_texts=total.shared_texts + block.shared_texts,
        ignored_columns=union(total.ignored_columns, block.ignored_columns),
        first_problem=total.first_problem or block.first_problem,
        landed_models=union(total.landed_models, block.landed_models),
        retired_models=union(total.retired_models, block.retired_models),
        models=union(total.models, block.models),
    )


def _traffic_summary(con: store.Connection, path: Path, fmt: str, source: str, file_hash: str) -> IngestSummary:
    """Write a decisions or outcomes file (their own tables and checks; the same one-transaction guarantees)."""
    if fmt == FORMAT_DECISIONS:
        loaded = load_decisions(con, path, source, file_hash)
        return IngestSummary(path=source, file_hash=file_hash, format=fmt, status="ingested",
                             rows_read=loaded.rows_read, rows_accepted=loaded.rows_accepted,
                             rows_duplicate=loaded.rows_duplicate, rows_quarantined=loaded.rows_quarantined,
                             first_problem=loaded.first_problem, unit="decisions")
    with store.memory_limited(con, INGEST_DUCKDB_MEMORY):  # the file's batches spill past it, as a log's blocks
        outcomes = load_outcomes(con, path, source, file_hash)
    return IngestSummary(path=source, file_hash=file_hash, format=fmt, status="ingested",
                         rows_read=outcomes.rows_read, rows_accepted=outcomes.rows_accepted,
                         rows_duplicate=outcomes.rows_duplicate, rows_quarantined=outcomes.rows_quarantined,
                         first_problem=outcomes.first_problem, unit="outcomes", rows_waiting=outcomes.rows_waiting)


def _pairs_summary(con: store.Connection, staged: StagedPairs, source: str, file_hash: str, bar: Any,
                   expose: Any = store.registered, now: datetime | None = None) -> IngestSummary:
    """Check and write a pairwise file's (or block's) battles (their own table and checks; the same guarantees)."""
    if bar is not None:
        bar.set_postfix_str(STAGES[2])
    written = load_pairs(con, staged, source, file_hash, expose, now)
    if bar is not None:
        bar.update(2)
    return IngestSummary(
        path=source, file_hash=file_hash, format=staged.format, status="ingested", rows_read=staged.rows_read,
        rows_accepted=written.rows_accepted, rows_duplicate=written.rows_duplicate,
        rows_quarantined=written.rows_quarantined, new_prompts=written.new_prompts, new_models=written.new_models,
        landed_models=written.landed_models, retired_models=written.retired_models, models=written.models,
        ignored_columns=staged.ignored_columns,
        unit="battles",
    )


def _record_file(con: store.Connection, summary: IngestSummary, now: datetime | None = None) -> None:
    """Record the ingested file content, in the same transaction as its rows."""
    store.execute(
        con, "ingest_insert_file", file_hash=summary.file_hash, path=summary.path, format=summary.format,
        rows_accepted=summary.rows_accepted, rows_quarantined=summary.rows_quarantined,
        new_prompts=summary.new_prompts, new_models=summary.new_models, now=now or datetime.now(),
    )


def readable_file(path: Path) -> tuple[int, str]:
    """(size, sha256) of a regular file; IngestError in one line for anything that is not one."""
    info = regular_file(path)
    try:
        return info.st_size, file_sha256(path)
    except OSError as exc:
        raise IngestError(f"{path}: cannot read the file: {exc.strerror or exc}") from exc


def regular_file(path: Path) -> os.stat_result:
    """The stat of a regular file (nothing read yet); IngestError in one line for anything that is not one."""
    try:
        info = path.stat()
    except FileNotFoundError as exc:
        raise IngestError(f"{path}: no such file") from exc
    except OSError as exc:  # ELOOP (a symlink loop), ENAMETOOLONG, EACCES on a folder on the way ...
        raise IngestError(f"{path}: cannot open: {exc.strerror or exc}") from exc
    if stat.S_ISDIR(info.st_mode):
        raise IngestError(f"{path}: a directory, not a file")
    if not stat.S_ISREG(info.st_mode):
        raise IngestError(f"{path}: not a regular file (a device, socket or pipe)")
    return info


def set_default_cost(con: store.Connection, model: str, cost: float) -> None:
    """Set a model's undated per-call price (`uniroute models set-cost`): one row of `prices` valid from
    prices.UNDATED, the one source of model-level costs; the model must be in the store and active."""
    if isinstance(cost, bool) or not isinstance(cost, int | float) or not math.isfinite(cost) or cost < 0 \
            or cost > COST_CEILING:
        raise IngestError(f"the cost of {model!r} must be a finite number in [0, {COST_CEILING:g}], not {cost!r}")
    record_prices(con, [Price(model, UNDATED, per_call=float(cost))], "set-cost")
