"""The methods an evaluation compares, and how reports name them."""

from __future__ import annotations

import logging

from uniroute.routers.kinds import router_kind, router_kinds

log = logging.getLogger(__name__)

# The candidate router kinds (routers.kinds), the paper's baseline (K-NN) listed first as in its table.
KIND_METHODS = tuple(k.name for k in sorted(router_kinds(), key=lambda k: not k.paper_baseline))
QUALITY_RULES = ("quality_rule_raw",)
METHODS = ("zero", *KIND_METHODS, "auto", "mlp", "matfac", "pairwise", *QUALITY_RULES)
# What an evaluation runs unless told otherwise: the paper's table plus the kinds and auto (`pairwise` is the
# arena-style experiment: it needs battles drawn from the labels and answers another question).
# The quality-only kinds (the `quality_rule` kind, routers.quality_rule.kind) and `quality_rule_raw` (the same rule,
# its tests not corrected for the M - 1 challengers: an evaluation method only) mean something only when costs are
# absent or equal: named, never run by default (`auto` considers the kind where the costs are equal).
QUALITY_KINDS = tuple(k for k in KIND_METHODS if router_kind(k).quality_only)
DEFAULT_METHODS = tuple(m for m in METHODS if m not in ("pairwise", *QUALITY_KINDS, *QUALITY_RULES))
ORACLES = ("mlp", "matfac")  # clairvoyant: trained with the test LLMs' labels; upper bounds, not admissible
VAL_SIZE_METHODS = ("auto", *KIND_METHODS)
METHOD_LABELS = {
    "zero": "ZeroRouter",
    **{name: router_kind(name).title for name in KIND_METHODS},
    "auto": "auto (best kind on validation)",
    "mlp": "MLP (clairvoyant oracle)",
    "matfac": "MatFac (clairvoyant oracle)",
    "pairwise": "UniRoute (K-means) from sparse battles",
    "quality_rule_raw": "quality-only rule, tests uncorrected",
}


def value_label(method: str) -> str:
    """What a method's tuned value counts: its kind's label ("K" or "k"); the pairwise method searches K."""
    return router_kind(method).value_label if method in KIND_METHODS else "K"
