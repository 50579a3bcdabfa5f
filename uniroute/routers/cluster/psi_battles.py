"""Psi rows from pairwise preferences on frozen clusters, beside the pointwise rows (paper: Chatbot Arena).

A pool may mix evidence. Models with pointwise results keep their group-by Psi rows (routers.cluster.psi) and act as
Bradley-Terry anchors at strength logit(1 - Psi); models with battles only are fitted per cluster against
them and each other (routers.cluster.bradley_terry) and get Psi = 1 - sigmoid(strength), on the same accuracy scale.
A pool with no pointwise evidence at all is fitted jointly, every cluster centred on its average model.
Onboarding anchors on the champion router's own rows, so a newcomer joins without refitting anybody. Frames in,
Psi out: the pipeline reads the frames from the store (pipeline.pool.psi_data).

Shapes: K clusters; the battle frame has columns cluster, model_a, model_b, n, w (w: summed outcome of model_a).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from uniroute.routers.cluster.bradley_terry import DEFAULT_PRIOR, anchor_strengths, counts_from_pairs, fit_strengths
from uniroute.routers.cluster.psi import Psi, psi_from_frame

if TYPE_CHECKING:
    from uniroute.routers.router import Router

log = logging.getLogger(__name__)

BATTLE_FRAME_COLUMNS = ("cluster", "model_a", "model_b", "n", "w")


def _concat(first: Psi | None, second: Psi) -> Psi:
    if first is None:
        return second
    return Psi(first.models + second.models, np.vstack([first.values, second.values]),
               np.vstack([first.counts, second.counts]))


def psi_from_battles(battles: pd.DataFrame, k: int, anchors: Psi | None = None, free: Sequence[str] | None = None,
                     prior: float = DEFAULT_PRIOR) -> Psi:
    """Psi rows of the `free` models (default: every battle model that is not an anchor) from battles.

    Anchors' strengths are logit(1 - their Psi rows) and stay fixed; battles with a model that is neither an
    anchor nor free are left out. A free model without a battle against the others is an error.
    """
    missing = [c for c in BATTLE_FRAME_COLUMNS if c not in battles.columns]
    if missing:
        raise ValueError(f"battle frame lacks columns {missing} (has {list(battles.columns)})")
    anchor_names = set(anchors.models) if anchors is not None else set()
    in_battles = list(dict.fromkeys([*battles["model_a"], *battles["model_b"]]))
    free = [m for m in in_battles if m not in anchor_names] if free is None else list(dict.fromkeys(free))
    overlap = sorted(anchor_names & set(free))
    if overlap:
        raise ValueError(f"models {overlap} are both anchors and free")
    names = [m for m in in_battles if m in anchor_names] + free
    index = {m: i for i, m in enumerate(names)}
    used = battles[battles["model_a"].isin(index) & battles["model_b"].isin(index)]
    counts = counts_from_pairs(used["cluster"].to_numpy(), used["model_a"].map(index).to_numpy(),
                               used["model_b"].map(index).to_numpy(), used["n"].to_numpy(), used["w"].to_numpy(),
                               k, names)
    per_model = counts.battles_per_model().sum(axis=0)
    alone = [m for m in free if per_model[index[m]] == 0]
    if alone:
        raise ValueError(f"models {alone} have no battle against a model of the pool: no Psi from battles")
    # Only anchor names are looked up, and there are some only when anchors are given.
    fixed = {m: anchor_strengths(1.0 - anchors.row(m)) for m in names if m in anchor_names}  # type: ignore[union-attr]
    fit = fit_strengths(counts, anchors=fixed, prior=prior)
    rows = [index[m] for m in free]
    quality = fit.quality()[rows]  # (F, K)
    log.info("Psi from %d battles for %d models (%d anchors)", int(counts.n.sum() / 2), len(free), len(fixed))
    return Psi(tuple(free), 1.0 - quality, np.rint(fit.battles.T[rows]).astype(np.int64))


def psi_with_battles(frame: pd.DataFrame, battles: pd.DataFrame, k: int) -> Psi:
    """Psi of every model in the pointwise group-by `frame` (routers.cluster.psi.PSI_FRAME_COLUMNS), plus rows from
    `battles` for the models that have battles there but no results (the build's Psi)."""
    if battles.empty:
        return psi_from_frame(frame, k)
    pointwise = psi_from_frame(frame, k) if len(frame) else None
    known = set(pointwise.models) if pointwise is not None else set()
    if not (set(battles["model_a"]) | set(battles["model_b"])) - known:
        return pointwise  # type: ignore[return-value]  # battles name models, all known: pointwise is set
    return _concat(pointwise, psi_from_battles(battles, k, anchors=pointwise))


def onboard_psi(frame: pd.DataFrame, battles: pd.DataFrame, models: Sequence[str], router: Router) -> Psi:
    """Psi rows of `models` on the router's frozen clusters: from their results in the pointwise group-by `frame`
    where they have some, else from their `battles` against the router's models (their rows kept fixed: nobody
    is refitted). Models with neither are left out. `battles` is used only for models without results."""
    counts = router.psi_counts if router.psi_counts is not None else np.zeros(router.psi.shape, dtype=np.int64)
    pool = Psi(router.models, router.psi, counts)
    frame = frame[frame["model"].isin(models)]
    pointwise = psi_from_frame(frame, pool.k) if len(frame) else None
    rest = [m for m in models if pointwise is None or m not in pointwise.models]
    if not rest:
        return pointwise  # type: ignore[return-value]  # None only when no models are asked for
    rest = [m for m in rest if m in set(battles["model_a"]) | set(battles["model_b"])]
    if not rest:
        return pointwise if pointwise is not None else Psi((), np.zeros((0, pool.k)), np.zeros((0, pool.k)))
    keep = [i for i, m in enumerate(pool.models) if m not in models]
    anchors = Psi(tuple(pool.models[i] for i in keep), pool.values[keep], pool.counts[keep])
    if pointwise is not None:
        anchors = _concat(anchors, pointwise)
    return _concat(pointwise, psi_from_battles(battles, pool.k, anchors=anchors, free=rest))
