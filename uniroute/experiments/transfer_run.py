"""A whole transfer evaluation: read both logs (optionally one benchmark family each), run the trials, report."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from uniroute.experiments.logs import eval_data_from_frame, long_frame
from uniroute.experiments.plots import write_curve_plot
from uniroute.experiments.protocol import EvalConfig
from uniroute.experiments.quality import has_costs, quality_report, unit_cost_data, write_quality_plot
from uniroute.experiments.report import evaluation_report
from uniroute.experiments.runner import trial_results
from uniroute.experiments.transfer import (
    PairwiseLog,
    TransferConfig,
    TransferData,
    pairwise_log_from_frame,
    transfer_report_fields,
    transfer_split,
)
from uniroute.experiments.transfer_trial import transfer_trial
from uniroute.ingest import is_pairwise_file, pairs_frame
from uniroute.selection.data import EvalData

log = logging.getLogger(__name__)


def only_benchmarks(frame: pd.DataFrame, benchmarks: Sequence[str] | None, path: Path) -> pd.DataFrame:
    """The rows of the named benchmarks (all rows when none is named); an unknown name is an error."""
    if not benchmarks:
        return frame
    if "benchmark" not in frame.columns or frame["benchmark"].isna().all():
        raise ValueError(f"{path}: no benchmark column to select {list(benchmarks)} from")
    known = sorted(frame["benchmark"].dropna().unique())
    unknown = sorted(set(benchmarks) - set(known))
    if unknown:
        raise ValueError(f"{path}: unknown benchmarks {unknown}; the file has {known}")
    return frame[frame["benchmark"].isin(benchmarks)].reset_index(drop=True)


def read_log(path: Path, benchmarks: Sequence[str] | None = None,
             allow_pairwise: bool = True) -> tuple[EvalData | PairwiseLog, bool]:
    """A log for transfer, detected by content: (pairwise log or pointwise matrices, whether it has costs).

    A pointwise log without costs is read with unit costs (quality-only); a pairwise log has none.
    """

    path = Path(path)
    if not path.is_dir() and is_pairwise_file(path):
        if not allow_pairwise:
            raise ValueError(f"{path}: a pairwise log; the test log needs pointwise labels (prompt x model scores)")
        return pairwise_log_from_frame(only_benchmarks(pairs_frame(path), benchmarks, path)), False
    frame = only_benchmarks(long_frame(path), benchmarks, path)
    costed = has_costs(frame)
    return (eval_data_from_frame(frame) if costed else unit_cost_data(frame)), costed


def evaluate_transfer(
    data: TransferData,
    X: np.ndarray,
    trials: int,
    config: TransferConfig,
    workers: int = 2,
    scheduler_address: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run the transfer trials; the report has the fields of `uniroute evaluate` plus the transfer protocol
    (quality-only fields when the test log has no costs)."""
    started = time.perf_counter()
    results = trial_results(X, data, trials, config,  # type: ignore[arg-type]  # what transfer_trial reads
                            workers, scheduler_address, progress, trial_fn=transfer_trial)
    report = evaluation_report(results, EvalConfig(seed=config.seed, methods=config.methods))
    report["seconds"] = time.perf_counter() - started
    report.update(seed=config.seed, n_prompts=data.n_prompts, models=list(data.routing.models),
                  excluded_models=list(data.excluded_models), workers=workers, filled_costs=0)
    report.update(transfer_report_fields(data, config))
    if data.quality_only:
        oracles = []
        for r in results:
            test = transfer_split(data, config, r["trial"]).test
            oracles.append(float(np.nanmax(data.routing.scores[test], axis=1).mean()))
        report = quality_report(report, results, oracles)
    return report, results


def write_transfer_outputs(report: dict[str, Any], out: Path, title: str) -> list[Path]:
    """The JSON report and its PNG beside it (deferral curves, or the quality bars when quality-only)."""
    import json


    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1, allow_nan=False) + "\n")
    png = out.with_suffix(".png")
    (write_quality_plot if report.get("quality_only") else write_curve_plot)(report, png, title)
    return [out, png]
