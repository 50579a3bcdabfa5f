"""The rule's path over lambda: each row's routed model as lambda grows from 0, walked exactly once for both
budget calibration (`rule.lambda_for_mean_cost`) and deferral curves (`selection.curves.switch_path`).

argmin_m gamma[i, m] + lambda * costs[m] (ties: the cheaper model, then the lower index) only ever moves to
cheaper models as lambda grows, at most M - 1 times per row: walking each row's lower envelope of lines gives
every switch exactly, in O(n M^2). Shapes: gamma (n, M), costs (M,); events (E,) sorted by lambda.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

GROUP_SHARE = 0.5  # walk distinct rows only when at most this share of the rows is distinct


def argmin_cheapest(scores: np.ndarray, costs: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """(n,) entry of candidates minimising scores (n, M)[:, m]; ties go to the cheaper, then the lower index."""
    # Reorder the candidate columns by (cost, index): argmin returns the first minimum, which is then the
    # cheapest among tied models and, among equal costs, the lowest index.
    order = candidates[np.lexsort((candidates, costs[candidates]))]
    return order[np.argmin(scores[:, order], axis=1)]


@dataclass(frozen=True)
class LambdaPath:
    """Each row's routed model as lambda grows: a start model, switch events to cheaper models, an end model."""

    start: np.ndarray  # (n,) model index at lambda = 0
    end: np.ndarray  # (n,) model index once lambda is past every switch (the row's cheapest reachable model)
    row: np.ndarray  # (E,) row of each event, events sorted by lambda (stable: step, then row order)
    lam: np.ndarray  # (E,) lambda at which the switch happens (the new model is chosen from here on)
    old: np.ndarray  # (E,) model before the switch
    new: np.ndarray  # (E,) model after


def lambda_path(gamma: np.ndarray, costs: np.ndarray) -> LambdaPath:
    """Exact path of argmin_m gamma[i, m] + lam * costs[m] over lam >= 0 (ties: cheaper, then lower index).

    gamma (n, M) and costs (M,) are used in the dtypes given (no conversion, so callers' floats are kept).
    Rows with identical gamma (every prompt of a cluster, for the K-means kinds) are walked once.
    """
    group = _row_groups(gamma)
    if group is None:
        start, steps = _switch_steps(gamma, costs)
    else:
        # Identical rows walk identical paths: walk each distinct row once and give its events to its rows,
        # step by step in ascending row order, which is exactly the event order of walking every row.
        first, inverse = group
        start_u, steps_u = _switch_steps(gamma[first], costs)
        start = start_u[inverse]
        steps = []
        for rows_u, lam_u, old_u, new_u in steps_u:
            at = np.full(first.size, -1)
            at[rows_u] = np.arange(rows_u.size)
            pos = at[inverse]
            rows = np.nonzero(pos >= 0)[0]
            pick = pos[rows]
            steps.append((rows, lam_u[pick], old_u[pick], new_u[pick]))
    end = start.copy()
    for rows, _, _, new in steps:  # a row switches at most once per step
        end[rows] = new
    if steps:
        row, lam, old, new = (np.concatenate(a) for a in zip(*steps, strict=True))
        order = np.argsort(lam, kind="stable")
        return LambdaPath(start=start, end=end, row=row[order], lam=lam[order], old=old[order], new=new[order])
    empty = np.zeros(0, dtype=np.int64)
    return LambdaPath(start=start, end=end, row=empty, lam=np.zeros(0), old=empty, new=empty)


def _row_groups(gamma: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(first row of each distinct row, each row's distinct-row index) when many rows repeat, else None."""
    n, m = gamma.shape
    if n < 2 or m == 0:
        return None
    # Equal rows have equal projections; rows grouped by projection are then checked to be truly equal.
    projection = gamma @ np.linspace(1.0, 2.0, m)
    _, first, inverse = np.unique(projection, return_index=True, return_inverse=True)
    if first.size > GROUP_SHARE * n or not np.array_equal(gamma[first][inverse], gamma):
        return None
    # Distinct rows in order of first appearance, so the walk sees them in ascending row order.
    by_first = np.argsort(first)
    rank = np.empty_like(by_first)
    rank[by_first] = np.arange(by_first.size)
    return first[by_first], rank[inverse]


def _switch_steps(gamma: np.ndarray, costs: np.ndarray) -> tuple[np.ndarray, list[tuple[np.ndarray, ...]]]:
    """The start model of every row and, per step, the (rows, lambda, old, new) of the rows that switch."""
    n, m = gamma.shape
    idx = np.arange(m)
    start: np.ndarray = argmin_cheapest(gamma, costs, idx) if n else np.zeros(0, dtype=np.int64)
    # Only rows that can still switch are carried into the next step: a row with no cheaper model left to
    # overtake its current one never switches again. Rows stay in ascending order, so the events (and every
    # number derived from them) are exactly those of walking all rows every step.
    ar = np.arange(n)
    cur = start.copy()
    cur_lam = np.zeros(n)
    g = gamma
    steps: list[tuple[np.ndarray, ...]] = []
    for _ in range(m):
        c_cur = costs[cur][:, None]
        g_cur = g[np.arange(ar.size), cur][:, None]
        cheaper = costs[None, :] < c_cur
        with np.errstate(divide="ignore", invalid="ignore"):
            cross = np.where(cheaper, (g - g_cur) / (c_cur - costs[None, :]), np.inf)
        # A cheaper model can only overtake at or after the current lambda (else it would be chosen already);
        # clamp float noise.
        cross = np.maximum(cross, cur_lam[:, None])
        nxt_lam = cross.min(axis=1)
        active = np.isfinite(nxt_lam)
        if not active.any():
            break
        cross, nxt_lam = cross[active], nxt_lam[active]
        tied = np.where(cross == nxt_lam[:, None], 0.0, np.inf)  # among simultaneous crossings: cheapest
        nxt = argmin_cheapest(tied, costs, idx)
        steps.append((ar[active], nxt_lam, cur[active], nxt))
        ar, g, cur, cur_lam = ar[active], g[active], nxt, nxt_lam
    return start, steps
