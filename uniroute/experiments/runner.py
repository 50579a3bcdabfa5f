"""Many trials in parallel (one Dask task each, seeded per trial) and the whole evaluation with its outputs."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from uniroute.experiments.methods import VAL_SIZE_METHODS
from uniroute.experiments.onboarding_study import selection_report
from uniroute.experiments.plots import write_curve_plot, write_val_size_plot
from uniroute.experiments.protocol import EvalConfig
from uniroute.experiments.report import evaluation_report, val_size_report
from uniroute.experiments.trial import SINGLE_THREAD_ENV, trial_result
from uniroute.selection.data import EvalData, RoutingData

log = logging.getLogger(__name__)

def trial_results(
    X: np.ndarray,
    data: RoutingData,
    trials: int,
    config: EvalConfig,
    workers: int = 2,
    scheduler_address: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    trial_fn: Callable[..., dict[str, Any]] = trial_result,
) -> list[dict[str, Any]]:
    """Run trials 0..trials-1: in-process when workers == 0, else one Dask task per trial (sorted by trial).

    trial_fn(X, data, trial, config) runs one trial (another protocol, e.g. transfer, passes its own)."""
    if trials < 1:
        raise ValueError(f"trials must be >= 1, got {trials}")
    X = np.ascontiguousarray(X, dtype=np.float32)
    if X.shape[0] != data.n_prompts:
        raise ValueError(f"{X.shape[0]} embeddings for {data.n_prompts} prompts")
    if workers == 0 and scheduler_address is None:
        results = []
        for t in range(trials):
            results.append(trial_fn(X, data, t, config))
            if progress:
                progress(t + 1, trials)
        return results
    if workers < 0:
        raise ValueError(f"workers must be >= 0, got {workers}")
    with _dask_client(workers, scheduler_address) as client:
        from distributed import as_completed

        # Scatter the arrays once; every trial task reads the same copy on its worker.
        X_f = client.scatter(X, broadcast=True)
        data_f = client.scatter(data, broadcast=True)
        futures = [
            client.submit(trial_fn, X_f, data_f, t, config, key=f"uniroute-trial-{config.seed}-{t}-{id(config)}")
            for t in range(trials)
        ]
        for done, _ in enumerate(as_completed(futures), start=1):
            if progress:
                progress(done, trials)
        results = client.gather(futures)
    return sorted(results, key=lambda r: r["trial"])


@contextlib.contextmanager
def _dask_client(workers: int, scheduler_address: str | None) -> Iterator[Any]:
    from distributed import Client, LocalCluster

    # The scheduler and nannies log every worker start and stop at INFO; keep the command's stderr readable.
    for name in ("distributed", "distributed.scheduler", "distributed.nanny", "distributed.core"):
        logging.getLogger(name).setLevel(max(logging.WARNING, logging.getLogger(name).level))
    if scheduler_address:
        with Client(scheduler_address) as client:
            yield client
        return
    # Processes, one thread each: the trials are numpy/torch bound and the GIL would serialise threads.
    with (
        LocalCluster(
            # A free port: None still means :8787, and a second evaluation would warn that it is taken.
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0",
            env=SINGLE_THREAD_ENV, silence_logs=logging.WARNING,
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client


def evaluate(
    data: EvalData,
    X: np.ndarray,
    trials: int,
    config: EvalConfig,
    workers: int = 2,
    scheduler_address: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[dict[str, Any], dict[str, Any] | None, list[dict[str, Any]]]:
    """Run the trials; return the JSON report, the validation-size report (or None) and the raw trial results."""
    started = time.perf_counter()
    results = trial_results(X, data.routing, trials, config, workers, scheduler_address, progress)
    report = evaluation_report(results, config)
    report["seconds"] = time.perf_counter() - started
    report.update(
        seed=config.seed,
        **({"battles_per_prompt": config.battles_per_prompt} if "pairwise" in config.methods else {}),
        n_prompts=data.routing.n_prompts,
        models=list(data.routing.models),
        excluded_models=list(data.excluded_models),
        filled_costs=data.filled_costs,
        workers=workers,
        protocol={
            "llm_split": "2/3 train, 1/3 test (half/half when fewer than 12 LLMs), random per trial",
            "prompt_split": f"{config.train_frac:.0%} train / {config.val_frac:.0%} val / rest test",
            "test_prompts": "only test prompts on which every test LLM has a result",
            "costs": "c(m) = mean cost on val prompts; normalised by the largest c(m) of the test pool",
            "lambda_grid": f"0 plus {config.n_lambdas} log-spaced values from the first to the last switch",
            "oracles": "mlp and matfac are clairvoyant upper bounds trained with the test LLMs' labels",
            "tuning": "K, k and the Psi shrinkage chosen per trial by simulated onboarding with the training LLMs "
                      "(n_val training prompts play the validation results), climbing a ladder until the Area "
                      "turns down; the LearnedMap takes K-means' K",
            "auto": "K-means with count-aware Psi unless another kind beats it by more than 2 standard errors "
                    "(bootstrap over prompts and training LLMs) on fresh simulated onboardings",
            "learned_map_epochs": config.learned_map_epochs,
            "oracle_epochs": config.oracle_epochs,
        },
    )
    study = val_size_report(results, config) if config.val_sizes and any(
        m in config.methods for m in VAL_SIZE_METHODS
    ) else None
    chosen_sets = selection_report(results, config) if study is not None else None
    if chosen_sets is not None:
        study["onboarding_set"] = chosen_sets  # type: ignore[index]  # chosen sets come only with a study
    return report, study, results


def write_outputs(
    report: dict[str, Any],
    study: dict[str, Any] | None,
    results: list[dict[str, Any]],
    out: Path,
    title: str,
) -> list[Path]:
    """Write the JSON report and the deferral-curve PNG beside it (+ the validation-size JSON/PNG)."""
    import json

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1, allow_nan=False) + "\n")
    png = out.with_suffix(".png")
    write_curve_plot(report, png, title)
    paths = [out, png]
    if study is not None:
        study_json = out.with_name(out.stem + "_valsize.json")
        study_png = out.with_name(out.stem + "_valsize.png")
        study.update(dataset=report.get("dataset"), embedder_id=report.get("embedder_id"), seed=report.get("seed"))
        study_json.write_text(json.dumps(study, indent=1, allow_nan=False) + "\n")
        write_val_size_plot(study, study_png, f"{title}\nArea vs number of validation prompts")
        paths += [study_json, study_png]
    return paths
