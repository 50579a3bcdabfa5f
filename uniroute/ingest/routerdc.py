"""RouterDC JSON: a list of {"question", "scores": {model: score}}."""

from __future__ import annotations

import hashlib
import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from uniroute.ingest.staging import (
    IngestError,
    Staged,
    numbers_from_objects,
    split_and_problems,
    staged_table,
)

log = logging.getLogger(__name__)

FORMAT_ROUTERDC = "routerdc-json"
ROUTERDC_ID_PREFIX = "rdc-"
# RouterDC names the task only in the file name, with the published train/test split as a suffix. The split
# is not part of the task's identity: the same question in both splits is one prompt.
ROUTERDC_SPLIT_SUFFIX = re.compile(r"(^|[_-])(train|test)$")
# Scores published as k/n for some n up to this are fractions of correct samples (generative tasks).
GRID_MAX_DENOMINATOR = 20
GRID_TOLERANCE = 1e-9

class JsonObject(dict):
    """A JSON object that remembers keys given twice (json keeps only the last value, silently)."""

    repeated: tuple[str, ...] = ()


def json_object(pairs: list[tuple[str, Any]]) -> JsonObject:
    obj = JsonObject(pairs)
    if len(obj) != len(pairs):
        counts = pd.Series([key for key, _ in pairs]).value_counts()
        obj.repeated = tuple(sorted(counts[counts > 1].index))
    return obj


def _on_grid(values: np.ndarray) -> np.ndarray:
    """(n,) bool: each value equals k/d for some denominator d <= GRID_MAX_DENOMINATOR."""
    unique, inverse = np.unique(values, return_inverse=True)
    denominators = np.arange(1, GRID_MAX_DENOMINATOR + 1, dtype=np.float64)
    scaled = unique[:, None] * denominators[None, :]  # (u, D)
    close = np.abs(scaled - np.round(scaled)) <= GRID_TOLERANCE * denominators
    return close.any(axis=1)[inverse]  # type: ignore[index]  # any over axis 1 of a matrix: an array


def routerdc_json(path: Path, text: str, split: str | None) -> Staged:
    """Staged rows of a RouterDC JSON file: a list of {"question", "scores": {model: score}}."""
    try:
        entries = json.loads(text, object_pairs_hook=json_object)
    except json.JSONDecodeError as exc:
        raise IngestError(
            f"{path}: not valid JSON (truncated?): {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from exc
    if not isinstance(entries, list):
        raise IngestError(f"{path}: a JSON {type(entries).__name__}; a RouterDC file is a list of objects")
    survey = RouterdcSurvey()
    survey.add(path, entries)
    survey.check(path)
    return routerdc_rows(path, entries, split, survey)


@dataclass
class RouterdcSurvey:
    """What the reader must know of the whole file before staging any entry: whether it is a RouterDC file at all,
    which kind of score it publishes (any valid score off the k/n grid: probabilities), the keys it ignores."""

    entries: int = 0
    usable: bool = False  # some entry has both "question" and "scores"
    first_shape: str = ""
    off_grid: bool = False
    keys: set[str] = field(default_factory=set)

    def add(self, path: Path, entries: list[Any]) -> None:
        """Survey some of the file's entries (in order)."""
        if entries and not self.entries:
            first = entries[0]
            self.first_shape = f"keys {sorted(first)}" if isinstance(first, dict) else f"a {type(first).__name__}"
        self.entries += len(entries)
        self.usable = self.usable or any(isinstance(e, dict) and "question" in e and "scores" in e for e in entries)
        self.keys.update(key for e in entries if isinstance(e, dict) for key in e)
        if not self.off_grid:
            raw = numbers_from_objects(_flat(entries, 1, "")[4])[0].to_numpy(zero_copy_only=False)
            valid = ~np.isnan(raw) & (raw >= 0) & (raw <= 1)
            self.off_grid = bool(valid.any() and not _on_grid(raw[valid]).all())

    def check(self, path: Path) -> None:
        """IngestError when the surveyed file is no RouterDC file this reader takes."""
        if not self.entries:
            raise IngestError(f"{path}: no data rows (an empty list)")
        if not self.usable:
            raise IngestError(
                f'{path}: not a RouterDC file: no entry has both "question" and "scores" (entry 1 has '
                f"{self.first_shape})"
            )

    @property
    def ignored(self) -> tuple[str, ...]:
        return tuple(sorted(self.keys - {"question", "scores", "cluster_id"}))


def routerdc_benchmark(path: Path) -> str:
    """The task of a RouterDC file: its name less the split suffix (a pair named just train.json / test.json is
    one task: the folder names it)."""
    return ROUTERDC_SPLIT_SUFFIX.sub("", path.stem) or path.resolve().parent.name


def _flat(entries: list[Any], first: int, benchmark: str) -> tuple[list[Any], ...]:
    """One row per (entry, model) of entries numbered from first: (row numbers, prompt ids, prompts, models,
    values, problems, raws); an entry with a problem is one row."""
    row_numbers: list[int] = []
    prompt_ids: list[str | None] = []
    prompts: list[str | None] = []
    models: list[str | None] = []
    values: list[Any] = []
    problems: list[str | None] = []
    raws: list[str | None] = []
    for number, entry in enumerate(entries, start=first):
        problem = None
        question = entry.get("question") if isinstance(entry, dict) else None
        scores = entry.get("scores") if isinstance(entry, dict) else None
        if not isinstance(entry, dict):
            problem = f"entry is a JSON {type(entry).__name__}, not an object"
        elif question is None:
            problem = "question is missing"
        elif not isinstance(question, str):
            problem = f"question {json.dumps(question)[:80]} is not text"
        elif not isinstance(scores, dict):
            problem = "scores is missing" if scores is None else f"scores {json.dumps(scores)[:80]} is not an object"
        elif not scores:
            problem = "scores is empty"
        elif isinstance(scores, JsonObject) and scores.repeated:
            problem = f"scores names models {list(scores.repeated)} more than once"
        prompt_id = None
        if isinstance(question, str):
            # The format has no ids: the id is the hash of (task, question), as in the shared long.parquet.
            digest = hashlib.sha1(f"{benchmark}\0{question}".encode()).hexdigest()[:16]
            prompt_id = ROUTERDC_ID_PREFIX + digest
        pairs = [(None, None)] if problem else list(scores.items())  # type: ignore[union-attr]  # no problem: a dict
        for model, value in pairs:
            row_numbers.append(number)
            prompt_ids.append(prompt_id)
            prompts.append(question if isinstance(question, str) else None)
            models.append(model)
            values.append(value)
            problems.append(problem)
            raws.append(json.dumps(entry)[:1000] if problem else None)
    return row_numbers, prompt_ids, prompts, models, values, problems, raws


def routerdc_rows(path: Path, entries: list[Any], split: str | None, survey: RouterdcSurvey, first: int = 1
                  ) -> Staged:
    """Staged rows of a RouterDC file's entries (all of them, or a block starting at entry first) given the
    survey of the whole file."""
    benchmark = routerdc_benchmark(path)
    row_numbers, prompt_ids, prompts, models, values, problems, raws = _flat(entries, first, benchmark)
    score, score_text = numbers_from_objects(values)
    raw = score.to_numpy(zero_copy_only=False)  # (n,) NaN where absent
    valid = ~np.isnan(raw) & (raw >= 0) & (raw <= 1)
    raw_score = pa.nulls(len(raw), pa.float64())
    if survey.off_grid:
        # The format mixes two kinds of score (routerdc_model7/PROVENANCE.md): generative tasks publish the
        # fraction of sampled answers that were correct (always k/n for a small n), multiple-choice tasks the
        # probability of the gold option when the argmax answer is correct, else 0. A file with any value off
        # that grid is of the second kind: its values are not correctness, but correctness is (value > 0).
        # The published value is kept in results.raw_score; invalid values stay as they are and are quarantined.
        raw_score = pa.array(np.where(valid, raw, np.nan), type=pa.float64(), mask=~valid)
        score = pa.array(np.where(valid, (raw > 0).astype(np.float64), raw), type=pa.float64(), mask=np.isnan(raw))
        if first == 1:
            log.info("%s: scores are gold-option probabilities; storing correctness = (score > 0)", path)
    n = len(row_numbers)
    split_values, _ = split_and_problems(None, split, n)
    staged = staged_table(
        n,
        {
            "row_number": row_numbers,
            "prompt_id": prompt_ids,
            "prompt": prompts,
            "model": models,
            "score": score,
            "score_text": score_text,
            "raw_score": raw_score,
            "benchmark": [benchmark] * n,
            "split": split_values,
            "pre_reason": problems,
            "raw": raws,
        },
    )
    return Staged(FORMAT_ROUTERDC, staged, len(entries), survey.ignored, per_model=True)
