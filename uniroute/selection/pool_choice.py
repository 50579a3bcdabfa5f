"""At equal costs: re-decide the served kind by cross-validation on the served pool's own validation answers.

Why (docs/results/quality_only.md, docs/decisions/0002-auto-rule.md): `auto` (selection.select_kind) compares kinds by
simulated onboarding of the TRAINING LLMs, another pool than the one it serves, and at equal costs which kind is better
depends on the pool: on RouterBench validation put the quality-only rule 0.0021 below count-aware K-means while on the
test LLMs it was 0.0093 above (GPT-4 dominates and moves between pools); on RouterDC K-means' specialist clusters win.
The served pool's validation answers (what onboarding already sees, never a test label) say which it is for that pool.

How: the validation prompts are split into FOLDS seeded folds. Per fold, each candidate's served router
(selection.served_router, the code every surface builds from) is fitted on the pool's answers with the fold's
rows blanked (NaN: no result, so Psi, its counts and the rule's cells are the other folds'), then routes the
fold's prompts at lambda = 0 (every model costs the same, so lambda does nothing); its CV score is the mean score
of the models it chose on those prompts. The clusterings, K and shrinkage stay as fitted and tuned on training.
Candidates: the kind select_kind chose (count-aware K-means almost always) and the quality-only rule (the kind
made for equal costs; K-NN's label table cannot be cross-fitted by blanking rows, a blanked neighbour stays a
neighbour, so it is not re-decided here). The rule is served only if its CV score beats the chosen kind's by more
than Z_POOL standard errors of the paired per-prompt difference: one SE, not select_kind's two, since this
compares two estimates of the same pool's answers (no pool shift to guard against, which is what the two SEs
cover there), while a tie keeps the kind chosen on training.

With unequal costs (the rule is then no candidate, routers.quality_rule.kind.QualityRuleKind.applies_to) or
unequal pool costs, the selection is returned as it is: the same object, so every result with costs is
bit-identical to before.

Shapes: n_val validation prompts, P pool models.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from uniroute.routers.kinds import Tuned
from uniroute.routers.quality_rule.kind import QUALITY_RULE, equal_costs
from uniroute.selection.candidates import CandidateFits
from uniroute.selection.selection import Selection, served_router

log = logging.getLogger(__name__)

FOLDS = 5  # validation folds: each fit keeps 80% of the pool's answers, close to what is served
Z_POOL = 1.0  # paired standard errors by which the rule must beat the kind chosen on training (module docstring)
CV_EMBEDDER = "pool-cv"  # the fold routers are never stored or checked against an embedder


@dataclass(frozen=True)
class PoolCV:
    """Cross-validated lambda = 0 scores of the candidates on the served pool's validation answers."""

    score: dict[str, float]  # mean held-out score of the models each candidate chose
    diff_se: dict[str, float]  # SE of (candidate - base), paired over the held-out prompts
    base: str  # the kind select_kind chose, which the others must beat
    n: int  # held-out prompts scored (those where every candidate's model has an answer)
    prompt_scores: dict[str, np.ndarray] = field(default_factory=dict, compare=False)  # (n_val,) NaN: not scored


def applies(selection: Selection, pool_costs: np.ndarray) -> bool:
    """Whether the pool decision runs: the rule is a candidate (every training LLM costs the same) and so do the
    served models."""
    kinds = [t.kind for t in selection.candidates]
    return QUALITY_RULE.name in kinds and equal_costs(np.asarray(pool_costs, dtype=np.float64)[None, :])


def pool_cv(fits: CandidateFits, candidates: Sequence[Tuned], base: str, models: Sequence[str],
            pool_val_losses: np.ndarray, pool_costs: np.ndarray, val_prompt_ids: Sequence[str]) -> PoolCV:
    """Each candidate's CV score on the pool's validation losses (n_val, P) (see the module docstring)."""
    losses = np.asarray(pool_val_losses, dtype=np.float64)
    n = losses.shape[0]
    fold = np.random.default_rng([fits.data.seed, n, 29]).permutation(n) % FOLDS
    scores = np.full((len(candidates), n), np.nan)
    for f in range(FOLDS):
        rows = np.nonzero(fold == f)[0]
        if rows.size == 0:
            continue
        masked = losses.copy()
        masked[rows] = np.nan
        if (~np.isnan(masked)).sum(axis=0).min(initial=1) == 0:  # a model answered only this fold: cannot fit
            continue
        for i, t in enumerate(candidates):
            router = served_router(fits, t, CV_EMBEDDER, models, masked, pool_costs, val_prompt_ids, n)
            picked = router.route(fits.data.X_val[rows], 0.0)
            scores[i, rows] = 1.0 - losses[rows, picked]
    known = ~np.isnan(scores).any(axis=0)
    kinds = [t.kind for t in candidates]
    b = kinds.index(base)
    scored = scores[:, known]
    m = int(known.sum())
    mean = {k: float(scored[i].mean()) if m else float("nan") for i, k in enumerate(kinds)}
    se = {k: float((scored[i] - scored[b]).std(ddof=1) / np.sqrt(m)) if m > 1 else float("inf")
          for i, k in enumerate(kinds)}
    return PoolCV(score=mean, diff_se=se, base=base, n=m,
                  prompt_scores={k: scores[i] for i, k in enumerate(kinds)})


def choose_on_pool(selection: Selection, fits: CandidateFits, models: Sequence[str], pool_val_losses: np.ndarray,
                   pool_costs: np.ndarray, val_prompt_ids: Sequence[str]) -> Selection:
    """The selection with its kind re-decided on the served pool at equal costs, else the same object."""
    if not applies(selection, pool_costs) or selection.chosen == QUALITY_RULE.name:
        return selection
    by_kind = {t.kind: t for t in selection.candidates}
    cands = [by_kind[selection.chosen], by_kind[QUALITY_RULE.name]]
    cv = pool_cv(fits, cands, selection.chosen, models, pool_val_losses, pool_costs, val_prompt_ids)
    lead = cv.score[QUALITY_RULE.name] - cv.score[selection.chosen]
    chosen = QUALITY_RULE.name if lead > Z_POOL * cv.diff_se[QUALITY_RULE.name] else selection.chosen
    log.info("equal costs, pool CV (%d folds, %d prompts): %s %.4f, %s %.4f (paired SE %.4f): served %s", FOLDS,
             cv.n, selection.chosen, cv.score[selection.chosen], QUALITY_RULE.name, cv.score[QUALITY_RULE.name],
             cv.diff_se[QUALITY_RULE.name], chosen)
    return replace(selection, chosen=chosen, pool_cv=cv)
