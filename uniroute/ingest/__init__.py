"""Data in: validate benchmark logs and load them into the store.

Owns the input formats (one module each: `long`, `routerbench`, `routerdc`, `pairwise`, behind
`formats.staged_file`, which detects the format by content and returns `staging.Staged` rows), the checks
(`checks`: each row on its own and within its file; SQL in `sql/queries/ingest_*.sql`: against the store), the
load (`load`: one file, one transaction) and the inbox (`inbox`). It writes the raw tables (prompts, models,
results, quarantine, ingested_files, prompt_keys, battles) and nothing else; it never embeds, clusters or
routes. Pairwise preferences (Chatbot Arena battles) have their own staged shape, checks (`pairwise_checks`)
and load (`pairwise_load`, the `battles` table) with the same guarantees.

One file, one transaction:
1. read: the format is detected by content and parsed into staged Arrow rows (`STAGE_SCHEMA`), one per
   (input row, model); what cannot be parsed at all is an IngestError naming the file, row and value;
2. check rows: strings are dictionary-coded and each row is checked on its own and within its file with
   vectorised numpy/pyarrow (`checked_rows`); a rejected row gets a reason;
3. check against the store: SQL finds rows that repeat a stored result (skipped) or contradict a stored
   prompt or result (quarantined);
4. write: new models, prompts and results, the quarantine and the file's content hash, then commit.
A killed process leaves nothing (DuckDB commits atomically); a file whose hash is stored is skipped.
"""

from typing import TYPE_CHECKING

from uniroute.lazy import lazy_attributes

if TYPE_CHECKING:  # the names as mypy and readers see them
    from uniroute.ingest.checks import Checked, checked_rows
    from uniroute.ingest.formats import detect_format, is_pairwise_file, staged_file
    from uniroute.ingest.inbox import PARTIAL_SUFFIXES, REASON_SUFFIX, InboxOutcome, inbox_files, process_inbox
    from uniroute.ingest.load import IngestSummary, ingest_file, set_default_cost
    from uniroute.ingest.pairwise import PAIRWISE_FORMATS, StagedPairs
    from uniroute.ingest.pairwise_load import pairs_frame
    from uniroute.ingest.staging import LONG_OPTIONAL, LONG_REQUIRED, SPLITS, IngestError, Staged, file_sha256

# Each name is imported from its module on first use (PEP 562): serving reads the decision records' shape
# (`decision_checks`) without the readers' pandas, Arrow and DuckDB.
_MODULE_OF = {
    "Checked": "uniroute.ingest.checks",
    "checked_rows": "uniroute.ingest.checks",
    "detect_format": "uniroute.ingest.formats",
    "is_pairwise_file": "uniroute.ingest.formats",
    "staged_file": "uniroute.ingest.formats",
    "PARTIAL_SUFFIXES": "uniroute.ingest.inbox",
    "REASON_SUFFIX": "uniroute.ingest.inbox",
    "InboxOutcome": "uniroute.ingest.inbox",
    "inbox_files": "uniroute.ingest.inbox",
    "process_inbox": "uniroute.ingest.inbox",
    "IngestSummary": "uniroute.ingest.load",
    "ingest_file": "uniroute.ingest.load",
    "set_default_cost": "uniroute.ingest.load",
    "PAIRWISE_FORMATS": "uniroute.ingest.pairwise",
    "StagedPairs": "uniroute.ingest.pairwise",
    "pairs_frame": "uniroute.ingest.pairwise_load",
    "LONG_OPTIONAL": "uniroute.ingest.staging",
    "LONG_REQUIRED": "uniroute.ingest.staging",
    "SPLITS": "uniroute.ingest.staging",
    "IngestError": "uniroute.ingest.staging",
    "Staged": "uniroute.ingest.staging",
    "file_sha256": "uniroute.ingest.staging",
}

__all__ = [
    "LONG_OPTIONAL",
    "PAIRWISE_FORMATS",
    "LONG_REQUIRED",
    "PARTIAL_SUFFIXES",
    "REASON_SUFFIX",
    "SPLITS",
    "Checked",
    "InboxOutcome",
    "IngestError",
    "IngestSummary",
    "Staged",
    "StagedPairs",
    "checked_rows",
    "detect_format",
    "file_sha256",
    "inbox_files",
    "is_pairwise_file",
    "ingest_file",
    "pairs_frame",
    "process_inbox",
    "set_default_cost",
    "staged_file",
]


__getattr__ = lazy_attributes(globals(), _MODULE_OF)
