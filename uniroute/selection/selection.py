"""Choose which router kind to serve, and say how sure the choice is.

Every tuned candidate (routers.kinds.Tuned: a registered kind with its chosen hyper-parameters) is re-measured
by simulated onboarding on fresh samples (candidates.py): the training LLMs'
Psi, or K-NN label table, comes from a random n_val training prompts, as a new LLM's comes from the validation
prompts, and the routing Area among the training LLMs is measured on prompts outside that sample (the
LearnedMap routes training prompts with maps fitted on the other half of them). No candidate is scored on labels
it averaged, no test prompt or test LLM is used, and the Area a value was tuned by (the best of a search, hence
optimistic) is not the one the kinds are compared by.

The rule: serve the default kind (routers.kinds.default_kinds), the K-means hierarchy (count-aware Psi on 2K cells,
each routed with its coarser groups; decision 0006), or where it is not a candidate count-aware K-means (it contains
plain K-means, strength 0, and the cluster-free router, K = 1), unless another kind's Area beats it by more than Z
standard errors of the paired difference; then the best such kind. Why not simply the best Area: across trials the
kinds' differences on our data are a few thousandths of Area while the training LLMs a build measures differ from
the LLMs it later serves; an argmax then picks a different kind by chance in many trials and serves worse, on
average, than the best kind. The standard errors come from a bootstrap that resamples the measured prompts *and* the
training LLMs (a pool of different LLMs is the larger part of the noise), identical for every candidate so that
differences are paired; P(best) is the share of resamples in which a candidate has the best Area.

At equal costs (the quality-only rule a candidate) the build and the evaluation then re-decide between this choice
and the rule on the served pool's own validation answers (pool_choice.choose_on_pool: the training pool misjudges
that comparison); `Selection.pool_cv` records it. With costs nothing is re-decided.

Interface for the pipeline (build, onboard, publish, pyfunc) — plain arrays in, routers out:

(a) fit every candidate kind from a build's data:
        data = TuningData(X_train, train_losses, train_costs, X_val, val_losses, val_costs, seed)
            # training prompts x training LLMs (every pool model with training labels), validation prompts x the
            # same LLMs; losses = 1 - score with NaN where no result; costs per result (NaN alike)
        fits = CandidateFits(data)
        tuned = {kind: fits.tune(kind) for kind in kind_names()}   # routers.kinds: the registered kinds
(b) select, then build the served router of the winner (or of every candidate, to register them all):
        selection = select_kind(fits, list(tuned.values()))    # Selection: chosen, Areas, SEs, P(best), table()
        router = served_router(fits, tuned[selection.chosen], embedder_id, models, pool_val_losses, pool_costs,
                               val_prompt_ids)
            # pool_val_losses (n_val, P): the served models' losses on the same validation prompts (rows of
            # data.X_val); pool_costs (P,) their c(m); val_prompt_ids (n_val,) the prompts' ids
        selection.table()  # a DataFrame (kind, value, shrinkage, val_area, val_area_se, diff_to_default,
                           # diff_se, p_best, chosen) for the store, the MLflow run and a SQL view
        selection.line()   # one line for logs and the CLI
(c) onboard a new model into the served router, whatever its kind (no refit):
        row, counts = router.model_row(prompt_ids, X, losses)   # the model's validation results
        router = router.with_model(name, row, cost, counts)
            # cluster kinds: row = its Psi row on router.psi_clusters() (K,), counts the prompts per cell;
            # knn: row = its losses on the router's reference prompts (n_ref,) aligned by prompt id, counts None
    Every kind serialises with routers/serialize.router_to_bytes (npz, no pickle) and routes with
    route(X, lam, pool) / lambda_for_budget(None, budget, pool) (its own validation stand-in).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from uniroute.routers.kinds import Tuned, default_kinds, router_kind
from uniroute.routers.rule import RoutingRule
from uniroute.selection.candidates import CandidateFits
from uniroute.selection.curves import bootstrap_areas
from uniroute.selection.scored_pool import LabelledPool

log = logging.getLogger(__name__)

Z = 2.0  # standard errors by which another kind must beat the default
BOOTSTRAP = 40  # resamples of the training LLMs and the measured prompts
BOOTSTRAP_PROMPTS = 600  # prompts (of the first fresh sample) the resamples draw from


@dataclass(frozen=True)
class Selection:
    """The chosen kind and every candidate's validation Area with its uncertainty."""

    chosen: str
    default: str
    candidates: tuple[Tuned, ...]
    area: dict[str, float]  # mean Area over the fresh simulated onboardings
    area_se: dict[str, float]
    diff_se: dict[str, float]  # standard error of (candidate - default), paired over the resamples
    p_best: dict[str, float]  # share of resamples in which the candidate has the best Area
    # standard error of (a - b) for every pair of candidates, paired over the resamples: what another rule on the
    # same resamples (another default) would compare by; evaluations record it
    pair_se: dict[str, dict[str, float]] = field(default_factory=dict)
    # At equal costs, the served pool's cross-validated scores that re-decided `chosen` (pool_choice.PoolCV);
    # None where that decision did not run (any costs), so `chosen` is select_kind's
    pool_cv: Any = None

    def table(self) -> pd.DataFrame:
        """One row per candidate: hyper-parameters, Area +/- SE, difference to the default +/- SE, P(best)."""
        rows = []
        for t in self.candidates:
            rows.append({
                "kind": t.kind, "value": t.value, "shrinkage": t.shrinkage,
                "val_area": self.area[t.kind], "val_area_se": self.area_se[t.kind],
                "diff_to_default": self.area[t.kind] - self.area[self.default], "diff_se": self.diff_se[t.kind],
                "p_best": self.p_best[t.kind], "chosen": t.kind == self.chosen,
            })
        return pd.DataFrame(rows)

    def line(self) -> str:
        """E.g. "served kmeans_shrunk K=6 s=5 (val Area 0.7712 +/- 0.0040, best in 63% of resamples)"."""
        t = next(c for c in self.candidates if c.kind == self.chosen)
        line = (f"served {t.label()} (val Area {self.area[t.kind]:.4f} +/- {self.area_se[t.kind]:.4f}, "
                f"best in {100 * self.p_best[t.kind]:.0f}% of resamples)")
        if self.pool_cv is not None:
            cv = self.pool_cv
            line += (f"; equal costs, chosen on the served pool's validation answers by {cv.n}-prompt CV: "
                     + ", ".join(f"{k} {v:.4f}" for k, v in cv.score.items()))
        return line


def _resampled_areas(fits: CandidateFits, candidates: Sequence[Tuned], n_val: int, bootstrap: int) -> np.ndarray:
    """(C, B) Areas of every candidate under B resamples of the training LLMs and of the measured prompts."""
    rng = np.random.default_rng([fits.data.seed, n_val, 17])
    first = fits.samples(n_val, "select")[0].pool
    rows = np.sort(rng.permutation(first.n)[:BOOTSTRAP_PROMPTS])
    gammas = [fits.onboarding_gammas(t.kind, t.value, n_val, t.shrinkage, "select")[0][0][rows] for t in candidates]
    m = first.scores.shape[1]
    out = np.empty((len(candidates), bootstrap))
    for b in range(bootstrap):
        models = np.unique(rng.choice(m, m))
        while models.size < min(2, m):
            models = np.unique(rng.choice(m, m))
        pool = LabelledPool.of(first.scores[np.ix_(rows, models)], first.prompt_costs[np.ix_(rows, models)],
                               first.router_costs[models])
        weights = rng.multinomial(rows.size, np.full(rows.size, 1.0 / rows.size))[None, :] / rows.size
        for i, gamma in enumerate(gammas):
            score, cost = pool.matrices(gamma[:, models])
            out[i, b] = bootstrap_areas(score, cost, weights)[0]
    return out


def clear_choice(area: Mapping[str, float], default: str, diff_se: Mapping[str, float], z: float = Z) -> str:
    """The rule itself: the default kind unless another kind's Area beats it by more than z standard errors of their
    paired difference (diff_se[kind]); then the best such kind."""
    clear = [k for k in area if k != default and area[k] - area[default] > z * diff_se[k]]
    return max(clear, key=lambda k: area[k]) if clear else default


def select_kind(fits: CandidateFits, candidates: Sequence[Tuned], n_val: int | None = None,
                bootstrap: int = BOOTSTRAP, z: float = Z) -> Selection:
    """The kind to serve for the first n_val validation prompts (see the module docstring for the rule)."""
    if not candidates:
        raise ValueError("no candidate to select from")
    kinds = [t.kind for t in candidates]
    if len(set(kinds)) != len(kinds):
        raise ValueError(f"candidates must be of different kinds, got {kinds}")
    n_val = fits.data.X_val.shape[0] if n_val is None else n_val
    area = {t.kind: float(np.mean([pool.area(g) for g, pool in
                                   fits.onboarding_gammas(t.kind, t.value, n_val, t.shrinkage, "select")]))
            for t in candidates}
    boot = _resampled_areas(fits, candidates, n_val, bootstrap)
    default = next((k for k in default_kinds() if k in kinds), max(kinds, key=lambda k: area[k]))
    d = kinds.index(default)
    diff_se = {k: float((boot[i] - boot[d]).std(ddof=1)) for i, k in enumerate(kinds)}
    chosen = clear_choice(area, default, diff_se, z)
    wins = np.bincount(np.argmax(boot, axis=0), minlength=len(kinds)) / bootstrap
    selection = Selection(
        chosen=chosen, default=default, candidates=tuple(candidates), area=area,
        area_se={k: float(boot[i].std(ddof=1)) for i, k in enumerate(kinds)}, diff_se=diff_se,
        p_best={k: float(wins[i]) for i, k in enumerate(kinds)},
        pair_se={a: {b: float((boot[i] - boot[j]).std(ddof=1)) for j, b in enumerate(kinds)}
                 for i, a in enumerate(kinds)},
    )
    log.info("%s", selection.line())
    return selection


def served_router(
    fits: CandidateFits, tuned: Tuned, embedder_id: str, models: Sequence[str], pool_val_losses: np.ndarray,
    pool_costs: np.ndarray, val_prompt_ids: Sequence[str], n_val: int | None = None,
) -> RoutingRule:
    """The router of a tuned kind over a pool, from the pool's losses on the first n_val validation prompts."""
    n_val = fits.data.X_val.shape[0] if n_val is None else n_val
    losses = np.asarray(pool_val_losses, dtype=np.float64)[:n_val]
    if losses.shape != (n_val, len(models)):
        raise ValueError(f"pool_val_losses {np.shape(pool_val_losses)} must be (n_val >= {n_val}, {len(models)})")
    return router_kind(tuned.kind).served_router(fits, tuned, embedder_id, models, losses, pool_costs, val_prompt_ids)


def model_row(router: RoutingRule, prompt_ids: Sequence[str], X: np.ndarray,
              losses: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """A model's row for router.with_model from its validation results: prompt ids, embeddings (n, d), losses (n,)
    (the router's own model_row: cluster kinds measure a Psi row on their clusters, K-NN aligns labels by id)."""
    return router.model_row(prompt_ids, X, losses)
