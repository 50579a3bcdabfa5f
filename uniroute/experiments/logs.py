"""Benchmark logs as an evaluation reads them: long rows from a file, pivoted to (N, M) score and cost matrices."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd

from uniroute.ingest.staging import case_rename_hint
from uniroute.selection.data import EvalData, RoutingData

log = logging.getLogger(__name__)

LONG_COLUMNS = ("prompt_id", "prompt", "model", "score", "cost")


def long_frame(path: Path) -> pd.DataFrame:
    """The long-format rows of a Parquet/CSV/JSONL file, or of `long.parquet` inside a dataset folder."""
    path = Path(path)
    if path.is_dir():
        if not (path / "long.parquet").exists():
            raise FileNotFoundError(f"{path} is a folder without long.parquet")
        path = path / "long.parquet"
    if not path.exists():
        raise FileNotFoundError(f"no such file: {path}")
    suffix = path.suffix.lower()
    if suffix in (".parquet", ".pq"):
        frame = pd.read_parquet(path)
    elif suffix == ".csv":
        frame = pd.read_csv(path)
    elif suffix in (".jsonl", ".ndjson", ".json"):
        frame = pd.read_json(path, lines=suffix != ".json")
    else:
        raise ValueError(f"{path}: unknown long-format extension {suffix!r} (use .parquet, .csv or .jsonl)")
    missing = [c for c in LONG_COLUMNS if c not in frame.columns]
    if missing:
        hint = case_rename_hint(list(frame.columns), missing)
        raise ValueError(f"{path}: long format needs columns {list(LONG_COLUMNS)}; missing {missing}{hint}")
    return frame


def eval_data_from_frame(frame: pd.DataFrame) -> EvalData:
    """Pivot long rows (prompt_id, prompt, model, score, cost) to (N, M) matrices; drop cost-less models."""
    frame = frame[list(LONG_COLUMNS)].copy()
    frame["prompt_id"] = frame["prompt_id"].astype(str)
    frame["model"] = frame["model"].astype(str)
    for column in ("score", "cost"):
        numbers = pd.to_numeric(frame[column], errors="coerce")
        unreadable = (numbers.isna() & frame[column].notna()).to_numpy().nonzero()[0]
        if unreadable.size:
            row = int(unreadable[0])
            raise ValueError(f"data row {row + 1}: {column} {frame[column].iloc[row]!r} is not a number")
        frame[column] = numbers.astype(np.float64)
    frame = frame[frame["score"].notna()]
    if frame.empty:
        raise ValueError("no scored rows in the long-format data")
    bad = frame[(frame["score"] < 0) | (frame["score"] > 1)]
    if len(bad):
        example = bad.head(3)[["prompt_id", "model", "score"]].to_dict("records")
        raise ValueError(f"scores outside [0, 1], e.g. {example}")
    if (frame["cost"] < 0).any():
        neg = frame[frame["cost"] < 0].head(3)[["prompt_id", "model", "cost"]].to_dict("records")
        raise ValueError(f"negative costs, e.g. {neg}")
    # The same row twice (a log concatenated with itself) says nothing new; two different results do.
    frame = frame.drop_duplicates(["prompt_id", "model", "score", "cost"])
    dupes = frame.duplicated(["prompt_id", "model"], keep=False)
    if dupes.any():
        example = frame[dupes].head(4)[["prompt_id", "model", "score"]].to_dict("records")
        raise ValueError(f"{int(dupes.sum())} rows repeat a (prompt_id, model) pair, e.g. {example}")
    # A model with no cost at all cannot be placed on a cost axis; it is left out of cost-based evaluation.
    has_cost = frame.groupby("model")["cost"].apply(lambda s: s.notna().any())
    excluded = tuple(sorted(has_cost.index[~has_cost.to_numpy()]))
    if excluded:
        log.info("models without any cost are excluded from cost-based evaluation: %s", list(excluded))
    frame = frame[~frame["model"].isin(excluded)]
    if frame["model"].nunique() < 2:
        raise ValueError(f"need at least 2 models with costs, have {sorted(frame['model'].unique())}")
    # Partially missing costs: fill with the model's mean known cost (its best per-query estimate).
    missing_cost = frame["cost"].isna()
    filled = int(missing_cost.sum())
    if filled:
        mean_cost = frame.groupby("model")["cost"].transform("mean")
        frame.loc[missing_cost, "cost"] = mean_cost[missing_cost]
        log.warning("%d result rows have no cost; filled with their model's mean cost", filled)
    # Sorted ids and names: the matrices do not depend on the row order of the input file.
    prompt_ids = np.sort(frame["prompt_id"].unique())
    models = tuple(sorted(frame["model"].unique()))
    row = pd.Index(prompt_ids).get_indexer(frame["prompt_id"])
    col = pd.Index(models).get_indexer(frame["model"])
    scores = np.full((len(prompt_ids), len(models)), np.nan)
    costs = np.full_like(scores, np.nan)
    scores[row, col] = frame["score"].to_numpy()
    costs[row, col] = frame["cost"].to_numpy()
    texts = frame.drop_duplicates("prompt_id").set_index("prompt_id")["prompt"].reindex(prompt_ids)
    if texts.isna().any():
        raise ValueError(f"prompts without text: {list(texts.index[texts.isna()][:5])}")
    return EvalData(
        prompt_ids=tuple(prompt_ids.tolist()),
        prompts=tuple(texts.astype(str).tolist()),
        routing=RoutingData(models=models, scores=scores, costs=costs),
        excluded_models=excluded,
        filled_costs=filled,
    )
