"""Why `auto` does not serve the quality-only rule on RouterBench: is its validation signal wrong, or does the
best kind depend on the pool of LLMs? Per trial, the rule and UniRoute (K-means, count-aware Psi), each with the
trial's tuned K (and s), are onboarded on the validation prompts twice, once for the training LLMs and once for
the test LLMs, and scored on the same test prompts among those LLMs (costs dropped).

Run: `OMP_NUM_THREADS=1 nice -n 15 .venv/bin/python -m benchmarks.quality.rule_by_pool
../shared/datasets/routerbench_subset last-block 20` (issue 28).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from uniroute.embed import make_embedder
from uniroute.experiments.logs import long_frame
from uniroute.experiments.prompts import prompt_texts
from uniroute.experiments.protocol import EvalConfig, trial_split
from uniroute.experiments.quality import unit_cost_data
from uniroute.routers.cluster.psi import psi_from_losses, shrunk_values
from uniroute.routers.quality_rule.switches import fit_quality_rule
from uniroute.selection.state import TrialState
from uniroute.settings import Settings


def pool_differences(state: TrialState, models: np.ndarray) -> float:
    """Test score of the rule minus count-aware K-means among these LLMs, both onboarded on the validation prompts."""
    split, n_val = state.split, len(state.split.val)
    ks, kr = state.tuned("kmeans_shrunk", n_val), state.tuned("quality_rule", n_val)
    val_losses = state.losses[np.ix_(split.val, models)]
    scores = state.data.scores[np.ix_(split.test, models)]
    labelled = ~np.isnan(scores).any(axis=1)
    scores, rows = scores[labelled], np.arange(labelled.sum())
    psi = psi_from_losses(state.fits.val_cluster(ks.value), val_losses, ks.value, [str(m) for m in models])
    clusters = state.fits.centroids(ks.value).assign(state.X_test)[labelled]
    kmeans = scores[rows, np.argmin(shrunk_values(psi.values, psi.counts, ks.shrinkage).T[clusters], axis=1)]
    rule = fit_quality_rule(state.fits.val_cluster(kr.value), val_losses, kr.value)
    routed = rule.routed(state.fits.centroids(kr.value).assign(state.X_test)[labelled])
    return float(scores[rows, routed].mean() - kmeans.mean())


def main(path: str, part: str, trials: int) -> None:
    data = unit_cost_data(long_frame(Path(path)))
    embedder = make_embedder("static", cache_dir=Settings().cache_dir)
    X = np.asarray(embedder.encode(prompt_texts(data.prompts, part)), dtype=np.float32)
    config = EvalConfig(seed=0)
    diffs = []
    for t in range(trials):
        split = trial_split(data.routing, config.seed, t, config.train_frac, config.val_frac)
        state = TrialState(X, data.routing, split, config)
        diffs.append((pool_differences(state, split.train_models), pool_differences(state, split.test_models)))
        print(f"trial {t}: training LLMs {diffs[-1][0]:+.4f}, test LLMs {diffs[-1][1]:+.4f}", flush=True)
    d = np.array(diffs)
    print(f"rule - kmeans_shrunk on the test prompts: among the training LLMs {d[:, 0].mean():+.4f} (ahead in "
          f"{(d[:, 0] > 0).sum()}, behind in {(d[:, 0] < 0).sum()} of {trials}), among the test LLMs "
          f"{d[:, 1].mean():+.4f} (ahead in {(d[:, 1] > 0).sum()}, behind in {(d[:, 1] < 0).sum()})")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
