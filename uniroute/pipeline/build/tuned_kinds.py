"""The build's candidate routers: every requested router kind tuned on the build's data, the kind to serve
chosen by selection.selection, and each kind's router over the whole pool.

Only the training LLMs' labels on training and validation prompts reach the tuning and the selection
(TrialState.fits); test prompts are never read here. Each kind's router is selection.served_router over every
pool model with validation results; where the build tuned on samples (build._tuning_rows) the kind brings it to
full scale (RouterKind.full_scale: the cluster kinds measure Psi on every validation prompt, and the one-hot
ones refit K-means on every training prompt, over the embedding dataset on the Dask workers).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from uniroute.errors import UnirouteError
from uniroute.pipeline.build.memory import release_freed
from uniroute.routers.cluster.kmeans import Centroids
from uniroute.routers.cluster.psi import Psi
from uniroute.routers.kinds import FullScale, Tuned, kind_names, router_kind
from uniroute.routers.serialize import AnyRouter
from uniroute.selection.pool_choice import choose_on_pool
from uniroute.selection.selection import Selection, select_kind, served_router
from uniroute.selection.split import TrialSplit
from uniroute.selection.state import TrialState

log = logging.getLogger(__name__)

TABLE_COLUMNS = ("kind", "value", "shrinkage", "val_area", "val_area_se", "diff_to_default", "diff_se", "p_best",
                 "chosen")


class KindError(UnirouteError, ValueError):
    """Router kinds a build cannot fit; the message names them and the known kinds."""


def checked_kinds(kinds: Sequence[str] | None) -> tuple[str, ...]:
    """The candidate kinds of a build (every registered kind by default), in registration order; KindError for
    unknown ones."""
    known = kind_names()
    if kinds is None:
        return known
    names = [k.strip() for k in kinds if k.strip()]
    unknown = sorted(set(names) - set(known))
    if unknown or not names:
        raise KindError(f"unknown router kinds {unknown or names}: choose from {', '.join(known)}")
    return tuple(k for k in known if k in names)


@dataclass(frozen=True, eq=False)
class Candidates:
    """The tuned kinds, the selection among them and each kind's router over the pool."""

    tuned: dict[str, Tuned]  # kind -> hyper-parameters, in registration order
    routers: dict[str, AnyRouter]  # kind -> router over the pool
    chosen: str
    selection: Selection | None  # None when there were too few training LLMs to measure any Area
    notes: tuple[str, ...] = ()

    def table(self) -> pd.DataFrame:
        """One row per candidate: the selection's table, or the untuned default without Areas."""
        if self.selection is not None:
            return self.selection.table()
        t = self.tuned[self.chosen]
        row = {"kind": t.kind, "value": t.value, "shrinkage": t.shrinkage, "chosen": True}
        return pd.DataFrame([row], columns=list(TABLE_COLUMNS))

    @property
    def default_kind(self) -> str:
        return self.selection.default if self.selection is not None else self.chosen

    def line(self) -> str:
        """One line for logs and the CLI: the selection's, or why nothing was compared."""
        if self.selection is not None:
            return self.selection.line()
        return f"served {self.tuned[self.chosen].label()} (not tuned: fewer than 2 training LLMs)"


def untuned_default(kinds: Sequence[str], n_val: int, n_train: int) -> Tuned:
    """Without two training LLMs nothing can be tuned or compared: the first requested kind that can be built
    without them (RouterKind.untuned: K = n_val / 50 as the paper's appendix does for Math+Code, k = sqrt(n_val);
    a LearnedMap cannot be trained), else the first registered kind that can."""
    for name in (*kinds, *kind_names()):
        tuned = router_kind(name).untuned(n_val, n_train)
        if tuned is not None:
            return tuned
    raise KindError(f"no router kind can be built without training LLMs among {list(kind_names())}")


def _full_scale(router: AnyRouter, kind: str, rows: BuildRows) -> AnyRouter:
    """The kind's router measured on every prompt where the tuning used samples of them (rows.sample)."""
    split, sample = rows.split, rows.sample
    scale = FullScale(train_sampled=len(sample.train) < len(split.train), val_sampled=len(sample.val) < len(split.val),
                      val_psi=rows.val_psi, refit_clusters=rows.refit_clusters)
    return router_kind(kind).full_scale(router, scale)


@dataclass(frozen=True, eq=False)
class BuildRows:
    """What a build tunes on and measures its routers on: the tuning state, and every validation prompt's Psi from
    the store (the driver holds no other row of the store: build_held.HeldRows)."""

    state: TrialState  # the tuning state over the (sampled) rows
    sample: TrialSplit  # the store rows the state was tuned on (build._tuning_rows; split when nothing was sampled)
    split: TrialSplit  # the build's whole split
    scores: np.ndarray  # (n_tuning, M_all) the tuning rows' scores (the first held rows)
    val_at: np.ndarray  # (n_val_all,) where split.val's prompts are among the held rows (sample.val's: tuning rows)
    prompt_ids: Mapping[int, str] | Sequence[str]  # store row -> prompt id: every validation prompt's at least
    # K-means (K) on every training prompt, for the kinds that refit where the tuning sampled them: the build
    # passes build_refits.Refits (clusters_dask), over the embedding dataset on the Dask workers (in-process without).
    refit_clusters: Callable[[int], Centroids]
    # Psi over every validation prompt assigned with these centroids (psi_data.val_psi: DuckDB over the results).
    val_psi: Callable[[Centroids, int, Sequence[str]], Psi]


@dataclass(frozen=True, eq=False)
class BuildPool:
    """The models the build's routers route: names, their columns of the score matrix, c(m), the embedder."""

    models: Sequence[str]
    columns: Sequence[int]
    costs: np.ndarray  # (P,) c(m)
    embedder_id: str


def fit_candidates(rows: BuildRows, pool: BuildPool, kinds: Sequence[str],
                   on_stage: Callable[[str], None] | None = None,
                   on_tuned: Callable[[Tuned], None] | None = None) -> Candidates:
    """Tune every kind, select the one to serve, and build each kind's router over the pool. on_tuned hears each
    kind's hyper-parameters as soon as they are chosen (the build starts its K-means refit then: build_refits)."""
    state, sample, split, prompt_ids = rows.state, rows.sample, rows.split, rows.prompt_ids
    pool_columns, pool_costs, embedder_id = pool.columns, pool.costs, pool.embedder_id
    pool_models = pool.models
    n_val = len(sample.val)
    notes: list[str] = []
    tunable = len(split.train_models) >= 2
    # A kind that does not apply to the data (the quality-only rule where models cost differently) is no candidate.
    skipped = [k for k in kinds if not router_kind(k).applies_to(state.fits.data)]
    kinds = [k for k in kinds if k not in skipped]
    if not kinds:
        raise KindError(f"router kinds {skipped} do not apply to this pool (quality-only kinds need every model at "
                        f"one cost): choose from {', '.join(kind_names())}")
    if skipped:
        notes.append(f"not candidates for this pool: {', '.join(skipped)}")
    selection: Selection | None  # None without tuning
    if tunable:
        tuned = {}
        for kind in kinds:  # one line per kind: K-means' grid on a large sample takes minutes
            if on_stage is not None:
                on_stage(f"tuning {kind}")
            started = time.perf_counter()
            tuned[kind] = state.tuned(kind, n_val)
            log.info("tuned %s in %.1f s", tuned[kind].label(), time.perf_counter() - started)
            if on_tuned is not None:
                on_tuned(tuned[kind])
        # The tuning's simulated onboardings are not read by the selection (its own samples): gone before it.
        state.fits.forget_onboardings("tune")
        release_freed()
        if on_stage is not None:
            on_stage("choosing the kind to serve")
        selection = select_kind(state.fits, list(tuned.values()), n_val)
        chosen = selection.chosen
    else:
        default = untuned_default(kinds, n_val, len(split.train))
        tuned, selection, chosen = {default.kind: default}, None, default.kind
        notes.append(f"{len(split.train_models)} training LLM(s): {default.label()} without tuning or selection")
    cols = np.asarray(pool_columns)
    # sample.val is a sorted subset of the sorted split.val: its positions among rows.val_scores' rows.
    tuning_losses = 1.0 - rows.scores[np.ix_(rows.val_at[np.searchsorted(split.val, sample.val)], cols)]
    val_ids = [prompt_ids[i] for i in sample.val]
    # A model without any result on the (sampled) validation prompts has nothing to route by: left out, and
    # onboarded later on all validation prompts when it is a cluster kind.
    seen = ~np.isnan(tuning_losses).all(axis=0)
    if not seen.all():
        unseen = [pool_models[int(i)] for i in np.nonzero(~seen)[0]]
        notes.append(f"no result on the sampled validation prompts: {unseen}")
    models = [m for m, s in zip(pool_models, seen, strict=True) if s]
    if selection is not None:  # at equal costs, re-decided on the pool's own validation answers (else unchanged)
        selection = choose_on_pool(selection, state.fits, models, tuning_losses[:, seen], pool_costs[seen], val_ids)
        chosen = selection.chosen
    routers = {}
    for kind, t in tuned.items():
        router = served_router(state.fits, t, embedder_id, models, tuning_losses[:, seen], pool_costs[seen], val_ids)
        routers[kind] = _full_scale(router, kind, rows)
    candidates = Candidates(tuned, routers, chosen, selection, tuple(notes))
    if selection is None:  # select_kind logs its own line
        log.info("%s", candidates.line())
    return candidates
