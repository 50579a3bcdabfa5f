"""The quality-only rule as a router kind (`quality_rule`): for pools whose models all cost the same.

With equal costs every router routes each prompt to the model of least estimated loss, and the cluster kinds'
per-cluster argmin mostly follows noise (routers/quality_rule/switches.py). The rule serves the model best on the
validation prompts everywhere except in the K-means clusters where the pool's own validation answers say another
model is better there after empirical-Bayes shrinkage (routers/quality_rule/empirical_bayes.py: two levels, K-means'
tuned K and the rule's finer K, strengths estimated from those answers, nothing tuned). It decided by per-cluster sign
tests (quality_rule.fit_quality_rule, Bonferroni-corrected) before; those missed RouterDC's domain specialists, which
K-means' coarse clusters see (docs/results/quality_only.md). As a kind it is tuned, compared and served like the
others: `auto` (selection.select_kind) measures it by the same simulated onboarding on the training LLMs, then
re-decides between its choice and the rule by cross-validation on the served pool's own validation answers
(selection.pool_choice); it is a candidate only when every model's mean
cost is the same (`applies_to`), since with costs it has no cost axis to trade along. Tried and not kept: this
rule as the default kind at equal costs (docs/results/quality_only.md, "Tried, not kept"): above the best single
test LLM on RouterBench, but it gave up part of RouterDC's K-means gain (20-7 over 30 trials, p = 0.019) and,
replayed on MMLU-Pro, fell significantly below the best single test LLM (3-15, p = 0.0075).

Its served router is the one-hot K-means router (routers.router.Router: Psi as measured on the validation
prompts, stored, published and onboarded like `kmeans`) whose floor (`psi_floor`, the evidence gate's
mechanism) holds every model but a cluster's rule model above that model's cell (quality_rule.rule_floor), so
route, published tables, the pyfunc and replay all route by the rule without knowing it. A model onboarded
without a rebuild joins under the evidence gate like in every cluster kind; the next build re-fits the rule.

K: about PROMPTS_PER_RULE_CLUSTER validation prompts a cluster, never below the Area-tuned K-means K (rule_k).

Shapes: n_val validation prompts, P pool models, M training LLMs, K clusters.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from uniroute.routers.cluster.kmeans_kind import KMEANS, KMeansKind
from uniroute.routers.kinds import FullScale, GridSearch, HeldOutState, RouterKind, Tuned, TuningEngine
from uniroute.routers.quality_rule.empirical_bayes import fit_eb_rule
from uniroute.routers.quality_rule.switches import QualityRule, rule_floor, rule_gamma
from uniroute.routers.router import Router

log = logging.getLogger(__name__)

PROMPTS_PER_RULE_CLUSTER = 50  # validation prompts per cluster the rule aims at (rule_k)
COST_TOLERANCE = 1e-9  # relative spread of the models' mean costs still counted as "the same cost"


def rule_k(n_val: int, tuned_k: int, n_train: int) -> int:
    """The rule's K: about PROMPTS_PER_RULE_CLUSTER validation prompts a cluster, never below the tuned K-means K.

    The Area-tuned K of quality-only data is small (MMLU-Pro, costs dropped: K = 1 in 9 of 20 trials, mean 3):
    with few clusters there is nowhere for a specialist to win, and the rule switched nothing. The rule's
    shrinkage, not K, is what guards against noise (each fine cell leans on its coarse K-means cell as far as the
    pool's answers show fine cells differing), so it can afford finer clusters, ~50 prompts a cluster (the
    paper's untuned K = n_val / 50)."""
    return int(min(max(tuned_k, round(n_val / PROMPTS_PER_RULE_CLUSTER)), n_train))


def coarse_k(engine: TuningEngine, n_val: int) -> int:
    """The coarse level of the rule's empirical-Bayes cells: the K-means K tuned on the training LLMs (cached)."""
    return int(engine.tune(KMEANS.name, n_val).value)


def equal_costs(*costs: np.ndarray) -> bool:
    """Whether every model (column) has the same mean known cost in all these (n, M) cost matrices."""
    known = [np.asarray(c, dtype=np.float64) for c in costs]
    sums = np.concatenate([np.nansum(c, axis=0) for c in known if c.size])
    counts = np.concatenate([(~np.isnan(c)).sum(axis=0) for c in known if c.size])
    means = sums[counts > 0] / counts[counts > 0]
    if means.size == 0:
        return True
    return bool(np.ptp(means) <= COST_TOLERANCE * max(1.0, float(np.abs(means).max())))


@dataclass(frozen=True, eq=False)
class RuleRouter(Router):
    """The cluster router of the rule: Psi as measured, every model but each cluster's rule model floored above it."""

    @property
    def kind(self) -> str:
        return QUALITY_RULE.name


def rule_router(router: Router, val_clusters: np.ndarray, val_losses: np.ndarray, coarse: np.ndarray | None = None,
                k_coarse: int = 1) -> RuleRouter:
    """The router with the rule fitted on its pool's validation losses (n_val, P) in these clusters (n_val,), over
    the coarse clusters (n_val,) of K-means' own K where given (quality_eb.eb_cells)."""
    plain = {f.name: getattr(router, f.name) for f in fields(router)} | {"psi_floor": None, "shrinkage": 0.0}
    measured = RuleRouter(**plain)
    rule = fit_eb_rule(val_clusters, val_losses, measured.k, coarse, k_coarse)
    floor = rule_floor(rule, measured.routing_psi, np.nanmean(val_losses, axis=0))
    log.info("quality-only rule: %d of %d clusters left the overall best %s", int(rule.switched.sum()), measured.k,
             measured.models[rule.best])
    return replace(measured, psi_floor=floor)


class QualityRuleKind(KMeansKind):
    """The quality-only rule on K-means clusters (see the module docstring)."""

    name = "quality_rule"
    title = "quality-only rule (best on val; per-cluster switches by empirical Bayes)"
    transfers = False
    pairwise_variant = None
    report_mark = ""
    quality_only = True

    def applies_to(self, data: Any) -> bool:
        """Only where every training LLM costs the same (selection.candidates.TuningData's costs)."""
        return equal_costs(data.train_costs, data.val_costs)

    def tune(self, engine: TuningEngine, n_val: int) -> Tuned:
        """K by rule_k from the tuned K-means K; its simulated-onboarding Area is recorded, not searched."""
        k = rule_k(n_val, engine.tune(KMEANS.name, n_val).value, engine.data.X_train.shape[0])
        area = engine.onboarding_area(self.name, k, n_val)
        return Tuned(self.name, k, search=GridSearch(chosen=k, areas={k: area}, at_bound=False, at_edge=False))

    def untuned(self, n_val: int, n_train: int) -> Tuned | None:
        """Without training LLMs the rule's K could be set, but nothing would say the rule beats K-means: none."""
        return None

    def onboarding_gammas(self, engine: TuningEngine, value: int, n_val: int, strength: float,
                          purpose: str) -> list[tuple[np.ndarray, Any]]:
        """Per repeat, (gamma, pool) of the rule fitted on the training LLMs' losses on the n_val sampled prompts."""
        out = []
        kc = coarse_k(engine, n_val)
        for smp in engine.samples(n_val, purpose):
            losses = engine.data.train_losses[smp.sample]
            rule = fit_eb_rule(engine.train_cluster(value)[smp.sample], losses, value,
                               engine.train_cluster(kc)[smp.sample], kc)
            clusters = np.concatenate([engine.train_cluster(value)[smp.rest], engine.val_cluster(value)[smp.vrows]])
            out.append((rule_gamma(rule, clusters, losses.shape[1], np.nanmean(losses, axis=0)), smp.pool))
        return out

    def _test_rule(self, state: HeldOutState, tuned: Tuned, n_val: int) -> tuple[QualityRule, np.ndarray]:
        """The rule fitted on the test LLMs' losses on the first n_val validation prompts; the test clusters."""
        losses = state.test_llm_val_losses(n_val)
        kc = coarse_k(state.fits, n_val)
        rule = fit_eb_rule(state.fits.val_cluster(tuned.value)[:n_val], losses, tuned.value,
                           state.fits.val_cluster(kc)[:n_val], kc)
        return rule, np.argmax(state.test_onehot(tuned.value), axis=1)

    def test_gamma(self, state: HeldOutState, tuned: Tuned, n_val: int) -> np.ndarray:
        """(n_te, M_te) the rule fitted on the test LLMs' losses on the first n_val validation prompts."""
        rule, clusters = self._test_rule(state, tuned, n_val)
        losses = state.test_llm_val_losses(n_val)
        return rule_gamma(rule, clusters, losses.shape[1], np.nanmean(losses, axis=0))

    def test_record(self, state: HeldOutState, tuned: Tuned, n_val: int) -> dict[str, Any]:
        """The overall best test LLM, how many clusters left it and the share of test prompts in them."""
        rule, clusters = self._test_rule(state, tuned, n_val)
        return {"best": state.test_llm_names()[rule.best], "switched": int(rule.switched.sum()),
                "switched_test_share": float(rule.switched[clusters].mean())}

    def served_router(self, engine: TuningEngine, tuned: Tuned, embedder_id: str, models: Sequence[str],
                      losses: np.ndarray, costs: np.ndarray, val_prompt_ids: Sequence[str]) -> RuleRouter:
        """The K-means router over the pool with the rule fitted on the pool's validation losses."""
        router = super().served_router(engine, replace(tuned, shrinkage=0.0), embedder_id, models, losses, costs,
                                       val_prompt_ids)
        n, kc = losses.shape[0], coarse_k(engine, losses.shape[0])
        return rule_router(router, engine.val_cluster(tuned.value)[:n], losses, engine.val_cluster(kc)[:n], kc)

    def full_scale(self, router: RuleRouter, scale: FullScale) -> RuleRouter:  # type: ignore[override]  # only its own
        """The rule as fitted on the build's samples, also where the build tuned on samples.

        Deviation from the other cluster kinds, which re-measure Psi on every validation prompt here: the rule's
        empirical-Bayes cells need the within-cell variances and both levels' clusters of the models' losses
        prompt by prompt, and at scale the driver holds only the sampled prompts' losses (every other prompt's Psi
        is a DuckDB group-by, pipeline.pool.psi_data). The validation sample (thousands of prompts) already gives the
        ~50 prompts a cluster the rule's K aims at (rule_k), so the sampled rule is the one served rather than a floor
        re-derived from means alone.
        """
        return router

    def router_from_arrays(self, header: dict[str, Any], arrays: dict[str, np.ndarray]) -> RuleRouter:
        """The rule's router from a stored header and arrays (the cluster router's, floor included)."""
        router = super().router_from_arrays(header, arrays)
        return RuleRouter(**{f.name: getattr(router, f.name) for f in fields(router)})


QUALITY_RULE: RouterKind = QualityRuleKind()
