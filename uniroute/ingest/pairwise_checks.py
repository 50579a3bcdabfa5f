"""Checks of staged battles on their own and within their file; every rejected row gets one precise reason."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from uniroute.ingest.checks import (
    BLANK,
    FORMULA_START,
    _codes,
    _first_index,
    _floats,
    _given_texts,
    _lookup,
    _Names,
    _positions,
    _present,
    _repeats,
)
from uniroute.ingest.staging import SPLITS

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CheckedPairs:
    """Staged battles after the checks within their file, as coded tables for the SQL against the store."""

    candidates: pa.Table  # row_number, pid, aid, bid, preference, winner: battles that passed (one per key)
    prompts: pa.Table  # pid, prompt_id, text, benchmark, split, sample_key: prompts of the candidates
    models: pa.Table  # mid, model: models of the candidates (aid and bid index it)
    rejects: pa.Table  # row_number, reason, raw: one per rejected row
    duplicates: int  # rows repeating an earlier row's battle exactly (dropped)


def _outcome_text(winner: Any, preference: float, model_a: str | None, model_b: str | None) -> str:
    """A battle's outcome as the reasons print it: who won, a tie, or the preference for model_a."""
    if winner in ("model_a", "model_b"):
        return f"{json.dumps(model_a if winner == 'model_a' else model_b)} won"
    return winner if winner is not None else f"preference {preference!r} for {json.dumps(model_a)}"


def checked_pairs(rows: pa.Table) -> CheckedPairs:
    """Check staged battles on their own and within their file (vectorised over codes, one reason per row)."""
    n = rows.num_rows
    row_number = rows["row_number"].to_numpy()
    pid, pid_values = _codes(rows["prompt_id"])
    # One dictionary for both sides, so a model is the same code as model_a and as model_b.
    both, mid_values = _codes(pa.chunked_array(rows["model_a"].chunks + rows["model_b"].chunks, pa.string()))
    aid, bid = both[:n], both[n:]
    tid, text_values = _codes(rows["prompt"])
    sid, split_values = _codes(rows["split"])
    preference, _ = _floats(rows["preference"])
    winner = rows["winner"].to_numpy(zero_copy_only=False)
    pre_reason, pre_given = _given_texts(rows["pre_reason"])
    reason: dict[int, str] = {}
    open_rows = np.ones(n, dtype=bool)

    def flag(mask: np.ndarray | None, message: Any) -> None:
        """Give rows in `mask` without a reason yet the reason message(i) (the first problem wins)."""
        if mask is None or not mask.any():
            return
        hit = np.flatnonzero(mask & open_rows)
        reason.update((int(i), message(i)) for i in hit)
        open_rows[hit] = False

    def each_value(values: pa.Array, test: Any) -> np.ndarray:
        return test(values).fill_null(False).to_numpy(zero_copy_only=False)

    flag(pre_given, lambda i: pre_reason[i])  # type: ignore[index]  # None only when no row gives one
    pid_text, mid_text, split_text = _Names(pid_values), _Names(mid_values), _Names(split_values)
    flag(_lookup(each_value(pid_values, lambda v: pc.equal(v, "")), pid, null=True), lambda i: "empty prompt_id")
    empty_model = each_value(mid_values, lambda v: pc.equal(v, ""))
    flag(_lookup(empty_model, aid, null=True), lambda i: "empty model_a")
    flag(_lookup(empty_model, bid, null=True), lambda i: "empty model_b")
    identifiers = ((pid, pid_values, pid_text, "prompt_id"), (aid, mid_values, mid_text, "model_a"),
                   (bid, mid_values, mid_text, "model_b"))
    for codes, values, text, what in identifiers:
        padded = each_value(values, lambda v: pc.not_equal(pc.utf8_trim(v, BLANK), v))
        flag(_lookup(padded, codes), lambda i, c=codes, t=text, w=what: (
            f"{w} {json.dumps(t[c[i]])} has leading or trailing whitespace"))
        formula = each_value(values, lambda v: pc.match_substring_regex(v, FORMULA_START))
        flag(_lookup(formula, codes), lambda i, c=codes, t=text, w=what: (
            f"{w} {json.dumps(t[c[i]])} starts like a spreadsheet formula"))
    blank_text = each_value(text_values, lambda v: pc.equal(pc.utf8_trim(v, BLANK), ""))
    flag(_lookup(blank_text, tid, null=True), lambda i: "empty prompt text")
    flag(aid == bid, lambda i: f"model_a and model_b are both {json.dumps(mid_text[aid[i]])}: a model against itself")
    bad_split = np.array([value not in SPLITS for value in split_text], dtype=bool)
    flag(_lookup(bad_split, sid), lambda i: f"split {json.dumps(split_text[sid[i]])} is not train, val or test")

    # Within the file, a prompt's first valid row fixes its text and split; later rows must agree.
    valid = np.flatnonzero(open_rows)
    first = _first_index(pid, valid, len(pid_values))
    # A file whose every prompt_id is missing has no first rows at all.
    anchor = first[np.where(pid >= 0, pid, 0)] if len(first) else np.zeros(n, dtype=np.int64)
    anchored = open_rows & (pid >= 0)
    flag(anchored & (tid != tid[np.minimum(anchor, n - 1)]), lambda i: (
        f"prompt_id {json.dumps(pid_text[pid[i]])} was given a different text on row {row_number[anchor[i]]}"))
    flag(anchored & (sid != sid[np.minimum(anchor, n - 1)]), lambda i: (
        f"prompt_id {json.dumps(pid_text[pid[i]])} has split "
        f"{json.dumps(split_text[sid[i]] if sid[i] >= 0 else None)} here but "
        f"{json.dumps(split_text[sid[anchor[i]]] if sid[anchor[i]] >= 0 else None)} on row {row_number[anchor[i]]}"))

    # A battle is (prompt, unordered pair): (p, a, b, y) repeats (p, b, a, 1 - y). An identical repeat is
    # dropped; a different outcome for the same battle is a conflicting duplicate.
    low, high = np.minimum(aid, bid), np.maximum(aid, bid)
    oriented = np.where(aid <= bid, preference, 1.0 - preference)
    consistent = _positions(open_rows)
    size = max(len(mid_values), 1)
    keys = (pid[consistent].astype(np.int64) * size + low[consistent]) * size + high[consistent]
    later, earlier = _repeats(keys, len(pid_values) * size * size)
    if not isinstance(consistent, slice):
        later, earlier = consistent[later], consistent[earlier]
    same = oriented[later] == oriented[earlier]
    open_rows[later[same]] = False
    conflicting = np.zeros(n, dtype=bool)
    conflicting[later[~same]] = True
    earlier_of = dict(zip(later.tolist(), earlier.tolist(), strict=True))

    def outcome(i: int) -> str:
        return _outcome_text(winner[i], float(preference[i]), mid_text[aid[i]], mid_text[bid[i]])

    flag(conflicting, lambda i: (
        f"duplicate of the battle ({json.dumps(pid_text[pid[i]])}, {json.dumps(mid_text[aid[i]])} vs "
        f"{json.dumps(mid_text[bid[i]])}) on row {row_number[earlier_of[i]]} with a different outcome: "
        f"{outcome(earlier_of[i])} there, {outcome(i)} here"))

    keep = _positions(open_rows)
    kept_models = _present(np.concatenate([aid[keep], bid[keep]]), len(mid_values))
    pids = _present(pid[keep], len(pid_values))
    at = pa.array(first[pids])
    return CheckedPairs(
        candidates=pa.table({
            "row_number": row_number[keep],
            "pid": pid[keep].astype(np.int32),
            "aid": aid[keep].astype(np.int32),
            "bid": bid[keep].astype(np.int32),
            "preference": preference[keep],
            "winner": rows["winner"].take(pa.array(np.arange(n)[keep])),
        }),
        prompts=pa.table({
            "pid": pids.astype(np.int32),
            "prompt_id": pid_values.take(pa.array(pids)),
            "text": text_values.take(pa.array(tid[first[pids]])),
            "benchmark": rows["benchmark"].take(at),
            "split": rows["split"].take(at),
            "sample_key": pa.nulls(len(pids), pa.string()),
        }),
        models=pa.table({"mid": kept_models.astype(np.int32), "model": mid_values.take(pa.array(kept_models))}),
        rejects=_rejects(rows, reason, row_number),
        duplicates=int(same.sum()),
    )


def _rejects(rows: pa.Table, reason: dict[int, str], row_number: np.ndarray) -> pa.Table:
    """One row per rejected battle: its row number, the reason and the input as JSON (the prompt cut short)."""
    bad = np.array(sorted(reason), dtype=np.int64)
    picked = rows.take(pa.array(bad)).to_pylist() if len(bad) else []
    raws = [
        item["raw"] if item["raw"] is not None else json.dumps({
            "prompt_id": item["prompt_id"], "model_a": item["model_a"], "model_b": item["model_b"],
            "winner": item["winner"],
            "preference": item["preference_text"] if item["preference_text"] is not None else item["preference"],
            "split": item["split"], "prompt": None if item["prompt"] is None else item["prompt"][:120],
        })
        for item in picked
    ]
    return pa.table({
        "row_number": pa.array(row_number[bad], pa.int64()),
        "reason": pa.array([reason[i] for i in bad.tolist()], pa.string()),
        "raw": pa.array(raws, pa.string()),
    })
