"""The build-embedder rule's measure (docs/decisions/0010-build-embedder-share-of-gap.md): each embedder's served
router against the best measured embedder's, as a paired share of the ZeroRouter-to-MLP gap, per dataset."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from benchmarks.runner import REPO
from uniroute.settings import DEFAULT_BUILD_EMBEDDER

# The build-embedder rule (docs/decisions/0010-build-embedder-share-of-gap.md): the served router may lose at most
# this share of the ZeroRouter-to-MLP gap to the best measured embedder (paired mean over the trials both have), on
# every dataset.
SHARE_LIMIT = 0.02
SERVED = "auto"  # the method that is what a build serves


def result_figures(result: dict[str, Any], name: str) -> dict[str, Any] | None:
    return result.get(name, {}).get("figures")


def paired_share(below: list[float], best: list[float], gap: list[float]) -> dict[str, Any]:
    """How much less Area `below` has than `best` over their common first trials (trial t is one split for every
    embedder), as a share of the mean gap over those same trials: the mean, its standard error (the resolution the
    rule's limit is read against) and the gap."""
    n = min(len(below), len(best), len(gap))
    loss = np.asarray(best[:n]) - np.asarray(below[:n])
    scale = float(np.mean(gap[:n]))
    se = float(np.std(loss, ddof=1) / np.sqrt(n)) if n > 1 else float("nan")
    return {"share": float(np.mean(loss)) / scale, "se": se / scale, "gap": scale, "trials": n}


def zero_to_mlp_gap(areas: dict[str, dict[str, list[float]]], best: str) -> tuple[str, list[float]] | None:
    """(whose run, per-trial MLP minus ZeroRouter Area): the scale of the rule, per dataset.

    The best embedder's own where its run measured MLP (MLP's Area depends on the embedding); otherwise the build
    default's, whose run is the README's quality run (as the study measured it) and measures every method on the
    same splits. ZeroRouter's Area is the same for every embedder (the routing table's ZeroRouter rows check it)."""
    for name in (best, DEFAULT_BUILD_EMBEDDER):
        trials = areas.get(name, {})
        if "mlp" in trials and "zero" in trials:
            return name, [m - z for m, z in zip(trials["mlp"], trials["zero"], strict=False)]
    return None


def served_shares(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per dataset: the best embedder of the served router (as collected), whose gap scales the rule, and per other
    embedder its paired share of the gap below the best with the collected sign test, read from the per-trial Areas
    of the evaluation files the result names (embedding.json keeps their means only)."""
    out: dict[str, dict[str, Any]] = {}
    for dataset, block in (result_figures(result, "routing") or {}).items():
        versus = block["vs_best"].get(SERVED, {"best": None, "tests": {}})
        best = versus["best"]
        areas = {name: json.loads((REPO / row["file"]).read_text())["per_trial_area"]
                 for name, row in block["embedders"].items() if row is not None}
        gap = zero_to_mlp_gap(areas, best) if best is not None else None
        shares = {name: {**paired_share(areas[name][SERVED], areas[best][SERVED], gap[1]),
                         **{k: test[k] for k in ("wins", "losses", "p")}}
                  for name, test in versus["tests"].items() if gap is not None}
        out[dataset] = {"best": best, "gap_from": gap[0] if gap else None, "shares": shares}
    return out


def share_below_best(shares: dict[str, dict[str, Any]], name: str, dataset: str) -> float | None:
    """The embedder's share of the gap below the best on a dataset (0 for the best itself; None: not measured)."""
    block = shares[dataset]
    if block["best"] == name:
        return 0.0
    return block["shares"][name]["share"] if name in block["shares"] else None


def gap_losses(shares: dict[str, dict[str, Any]], name: str) -> list[str]:
    """Where the embedder loses more than SHARE_LIMIT of the gap, or is not measured: 'dataset (...)' strings."""
    out = []
    for dataset in shares:
        share = share_below_best(shares, name, dataset)
        if share is None:
            out.append(f"{dataset} (not measured)")
        elif share > SHARE_LIMIT:
            out.append(f"{dataset} ({share:.1%})")
    return out
