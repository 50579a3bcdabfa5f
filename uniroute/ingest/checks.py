"""Checks of staged rows on their own and within their file (vectorised; every rejected row gets a precise reason)."""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, SupportsFloat, SupportsInt

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from uniroute.ingest.staging import (
    SPLITS,
)

log = logging.getLogger(__name__)

# Identifiers (prompt ids, model names) that a spreadsheet would run as a formula if the store's tables were
# exported (CSV injection); real ids never start like this.
FORMULA_START = r"^[=+\-@\t\r]"
BLANK = " \t\r\n"
# The largest cost per query a result may carry, in the data's own unit (USD per query, billions of parameters,
# ...). One accepted cost of 1e308 is finite, yet the mean cost of its model overflowed to inf and every later
# build, publish and doctor crashed; no real per-query cost comes near a million of any unit.
COST_CEILING = 1e6
# Model names are printed, matched in --pool and written into routing tables: a control character (a newline,
# an escape) or a bidirectional override (which displays the name reversed) hides what the name is.
HIDDEN_CHARACTERS = r"[\x00-\x1f\x7f\x{202a}-\x{202e}\x{2066}-\x{2069}]"  # RE2 syntax


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
    shared_texts: int = 0  # prompt ids whose text another prompt id of the file has too (reported, kept)


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

    def __getitem__(self, code: SupportsInt) -> str | None:
        return self.values[int(code)].as_py()

    def __iter__(self) -> Iterator[str | None]:
        return iter(self.values.to_pylist())


def _number_text(value: SupportsFloat | None) -> str:
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

    def flag(mask: np.ndarray | None, message: Any) -> None:
        """Give rows in `mask` without a reason yet the reason message(i) (the first problem wins)."""
        if mask is None or not mask.any():
            return
        hit = np.flatnonzero(mask & open_rows)
        if len(hit):
            reason.update((int(i), message(i)) for i in hit)
            open_rows[hit] = False

    def each_value(values: pa.Array, test: Any) -> np.ndarray:
        return test(values).fill_null(False).to_numpy(zero_copy_only=False)

    flag(pre_given, lambda i: pre_reason[i])  # type: ignore[index]  # None only when no row gives one
    pid_text = _Names(pid_values)
    mid_text = _Names(mid_values)
    flag(_lookup(each_value(pid_values, lambda v: pc.equal(v, "")), pid, null=True), lambda i: "empty prompt_id")
    flag(_lookup(each_value(mid_values, lambda v: pc.equal(v, "")), mid, null=True), lambda i: "empty model name")
    identifiers = ((pid, pid_values, pid_text, "prompt_id"), (mid, mid_values, mid_text, "model name"))
    for codes, values, text, what in identifiers:
        padded = each_value(values, lambda v: pc.not_equal(pc.utf8_trim(v, BLANK), v))
        flag(_lookup(padded, codes), lambda i, c=codes, t=text, w=what: (
            f"{w} {json.dumps(t[c[i]])} has leading or trailing whitespace"))
    hidden = each_value(mid_values, lambda v: pc.match_substring_regex(v, HIDDEN_CHARACTERS))
    flag(_lookup(hidden, mid), lambda i: (
        f"model name {json.dumps(mid_text[mid[i]])} contains a control or bidirectional-override character"))
    for codes, values, text, what in identifiers:
        formula = each_value(values, lambda v: pc.match_substring_regex(v, FORMULA_START))
        flag(_lookup(formula, codes), lambda i, c=codes, t=text, w=what: (
            f"{w} {json.dumps(t[c[i]])} starts like a spreadsheet formula"))
    blank_text = each_value(text_values, lambda v: pc.equal(pc.utf8_trim(v, BLANK), ""))
    flag(_lookup(blank_text, tid, null=True), lambda i: "empty prompt text")
    with np.errstate(invalid="ignore"):
        # One pass finds whether any score or cost needs a closer look (NaN fails every comparison).
        if not ((score >= 0) & (score <= 1)).all():
            # Its texts are None only when no row gives one, and then no row is flagged.
            flag(score_unreadable,
                 lambda i: f"score {json.dumps(score_text[i])} is not a number")  # type: ignore[index]
            flag(~score_given, lambda i: "score is missing")
            flag(score_given & np.isnan(score), lambda i: "score NaN is not a number in [0, 1]")
            flag((score < 0) | (score > 1), lambda i: f"score {_number_text(score[i])} is outside [0, 1]")
        if not ((cost >= 0) & (cost <= COST_CEILING) | ~(cost_given | cost_unreadable)).all():
            # Its texts are None only when no row gives one, and then no row is flagged.
            flag(cost_unreadable,
                 lambda i: f"cost {json.dumps(cost_text[i])} is not a number")  # type: ignore[index]
            flag(cost_given & np.isnan(cost), lambda i: "cost NaN is not a number (leave it empty for no cost)")
            flag(np.isinf(cost), lambda i: f"cost {_number_text(cost[i])} is not finite")
            flag(cost < 0, lambda i: f"cost {_number_text(cost[i])} is negative")
            flag(cost > COST_CEILING, lambda i: (
                f"cost {_number_text(cost[i])} is above the ceiling of {COST_CEILING:g} per query (check its unit)"))
    split_text = _Names(split_values)
    bad_split = np.array([value not in SPLITS for value in split_text], dtype=bool)
    flag(_lookup(bad_split, sid), lambda i: f"split {json.dumps(split_text[sid[i]])} is not train, val or test")

    # Within the file, a prompt's first valid row fixes its text and split; later rows must agree.
    valid = np.flatnonzero(open_rows)
    first = _first_index(pid, valid, len(pid_values))  # (n_prompt_ids,) staged index of each id's first row
    # (n,) that row, for every row (a file whose every prompt_id is missing has no first rows at all)
    anchor = first[np.where(pid >= 0, pid, 0)] if len(first) else np.zeros(n, dtype=np.int64)
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

    # The same text under another prompt_id is the same question: one model cannot have scored it two ways.
    consistent = _positions(open_rows)
    text_keys = tid[consistent].astype(np.int64) * max(len(mid_values), 1) + mid[consistent]
    later, earlier = _repeats(text_keys, max(len(text_values), 1) * max(len(mid_values), 1))
    if not isinstance(consistent, slice):
        later, earlier = consistent[later], consistent[earlier]
    clash = (pid[later] != pid[earlier]) & (score[later] != score[earlier])
    text_conflict = np.zeros(n, dtype=bool)
    text_conflict[later[clash]] = True
    text_earlier = dict(zip(later[clash].tolist(), earlier[clash].tolist(), strict=True))
    flag(text_conflict, lambda i: (
        f"prompt_id {json.dumps(pid_text[pid[i]])} has the same text as prompt_id "
        f"{json.dumps(pid_text[pid[text_earlier[i]]])} on row {row_number[text_earlier[i]]}, and model "
        f"{json.dumps(mid_text[mid[i]])} scored it {_number_text(score[text_earlier[i]])} there, "
        f"{_number_text(score[i])} here"))

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
        shared_texts=_ids_sharing_a_text(pid[keep], tid[keep]),
    )


def _ids_sharing_a_text(pid: np.ndarray, tid: np.ndarray) -> int:
    """How many distinct prompt ids carry a text that another prompt id of the file carries too."""
    if len(pid) == 0:
        return 0
    span = int(pid.max()) + 1
    pairs = np.unique(tid.astype(np.int64) * span + pid)  # distinct (text, id) pairs as one int64 each
    _, counts = np.unique(pairs // span, return_counts=True)
    return int(counts[counts > 1].sum())


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
                  first: np.ndarray, keep: np.ndarray | slice) -> pa.Table:
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


# Rejected rows turned into Python objects at a time for their reasons: all of a junk file's rows at once took
# about ten times the file.
REJECT_BATCH = 32_768
REJECT_COLUMNS = ("prompt_id", "model", "score", "score_text", "cost", "cost_text", "raw_score", "split", "prompt",
                  "pre_reason", "raw")
QUOTED_PROMPT = 120  # characters of the prompt kept in a rejected row's JSON


def _reject_table(rows: pa.Table, reason: dict[int, str], row_number: np.ndarray, per_model: bool) -> pa.Table:
    """One row per rejected staged row: its input row number, the reason (naming the model where an input
    row holds several models' results) and the input as JSON; built REJECT_BATCH rows at a time."""
    bad = np.array(sorted(reason), dtype=np.int64)
    parts = [_reject_batch(rows, reason, row_number, per_model, bad[start:start + REJECT_BATCH])
             for start in range(0, len(bad), REJECT_BATCH)]
    if not parts:
        return pa.table({"row_number": pa.array([], pa.int64()), "reason": pa.array([], pa.string()),
                         "raw": pa.array([], pa.string())})
    return pa.concat_tables(parts)


def _reject_batch(rows: pa.Table, reason: dict[int, str], row_number: np.ndarray, per_model: bool,
                  bad: np.ndarray) -> pa.Table:
    picked = rows.select(list(REJECT_COLUMNS)).take(pa.array(bad))
    # Only the quoted start of a prompt becomes a Python string, not a whole (maybe huge) text.
    prompt = pc.utf8_slice_codeunits(picked["prompt"].cast(pa.string()), 0, QUOTED_PROMPT)
    picked = picked.set_column(picked.schema.get_field_index("prompt"), "prompt", prompt).to_pylist()
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
            "split": item["split"], "prompt": item["prompt"],
        }, default=str))
    return pa.table({
        "row_number": pa.array(row_number[bad], pa.int64()),
        "reason": pa.array(reasons, pa.string()),
        "raw": pa.array(raws, pa.string()),
    })
