"""What a router kind is, and the one registry of them.

A kind (`RouterKind`) owns everything that differs between kinds: its name, the label of its hyper-parameter
("K" clusters or "k" neighbours) and its report title, how it is tuned on its ladder (calling back into the
selection engine through `TuningEngine`, so routers never import selection), how a model joins it in a
simulated onboarding, what it estimates for held-out LLMs (`HeldOutState`), its value without training LLMs,
how its served router is built and brought to full scale, and how that router is stored (`serialize`).
Questions about one fitted router (a model's row, a prompt's cluster, its Psi table) are the router's methods
(`rule.RoutingRule`). Nothing outside `uniroute/routers/` branches on a kind's name or a router's class.

Shapes: n_val validation prompts, P pool models, d embedding dimension.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

if TYPE_CHECKING:
    from uniroute.routers.cluster.kmeans import Centroids
    from uniroute.routers.cluster.psi import Psi
    from uniroute.routers.rule import RoutingRule

log = logging.getLogger(__name__)

# The ladders the kinds search their hyper-parameter on: each starts at the smallest meaningful value
# (K = 1 is the cluster-free router, k = 1 the nearest neighbour) and climbs about geometrically to a principled
# bound (selection.grids searches it upward until the validation Area turns down).
CLUSTER_STEPS = (1, 1.5)  # clusters: 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, ... (x 2 ** j, about x 1.4 per rung)
NEIGHBOUR_STEPS = (1, 2, 3, 5, 8)  # neighbours: 1, 2, 3, 5, 8, 10, 20, 30, 50, 80, 100, ... (x 10 ** j)


def ladder(steps: tuple[float, ...], base: int, top: int) -> list[int]:
    """The integers step * base ** j (j = 0, 1, ...) below `top`, then `top` itself: 1 ... top, increasing."""
    values: set[int] = set()
    scale = 1
    while min(steps) * scale < top:
        values.update(round(step * scale) for step in steps if round(step * scale) < top)
        scale *= base
    return sorted(values | {max(1, top)})


def cluster_ladder(n_val: int, n_train: int) -> list[int]:
    """Candidate K (K-means, LearnedMap): 1 to min(n_val, n_train)."""
    return ladder(CLUSTER_STEPS, 2, max(1, min(n_val, n_train)))


def neighbour_ladder(n_val: int) -> list[int]:
    """Candidate k (K-NN over the validation prompts): 1 to n_val."""
    return ladder(NEIGHBOUR_STEPS, 10, max(1, n_val))


@dataclass(frozen=True)
class GridSearch:
    """The searched values, their validation Areas, the chosen one and where it sits on the ladder."""

    chosen: int
    areas: dict[int, float]
    at_bound: bool  # chosen is the ladder's first or last value: a principled limit, not a grid too small
    at_edge: bool  # chosen is the largest value searched while larger ones were left unsearched (budget cap)

_KINDS: dict[str, RouterKind] = {}
_DEFAULT: list[str] = []  # the default kind's name, then the kinds served by default where it is not a candidate
# The built-in kinds (module, instance), registered on first use in this order: the order the selection
# compares them in, which its tie rules depend on.
_BUILTIN = (("uniroute.routers.cluster.kmeans_kind", "KMEANS"),
            ("uniroute.routers.cluster.kmeans_kind", "KMEANS_SHRUNK"),
            ("uniroute.routers.cluster.learnedmap_kind", "LEARNED_MAP"), ("uniroute.routers.knn.kind", "KNN"),
            ("uniroute.routers.quality_rule.kind", "QUALITY_RULE"),
            ("uniroute.routers.cluster.kmeans_kind", "KMEANS_HIER"))
# The default kind, then its fallback: the hierarchy is served unless another kind beats it clearly (validation
# supports it: docs/decisions/0006-several-k-not-served-yet.md); a build whose candidates leave it out (`--kinds`)
# serves count-aware K-means, the kind it refines, as before the hierarchy was the default.
_DEFAULT_BUILTIN = ("KMEANS_HIER", "KMEANS_SHRUNK")


@dataclass(frozen=True)
class Tuned:
    """A router kind with its chosen hyper-parameters and the validation Areas they were chosen by."""

    kind: str
    value: int  # K (clusters) or k (neighbours)
    shrinkage: float = 0.0
    search: GridSearch | None = None
    strengths: dict[float, float] = field(default_factory=dict)  # kmeans_shrunk: Area per strength at the chosen K

    def label(self) -> str:
        """E.g. "kmeans K=6", "kmeans_shrunk K=12 s=5", "knn k=34"."""
        name = router_kind(self.kind).value_label
        return f"{self.kind} {name}={self.value}" + (f" s={self.shrinkage:g}" if self.shrinkage else "")


class OnboardingSample(Protocol):
    """One simulated onboarding of the engine (selection.candidates.Sample); read-only, as that frozen dataclass."""

    @property
    def sample(self) -> np.ndarray: ...  # training prompts whose labels play the validation results
    @property
    def rest(self) -> np.ndarray: ...  # other training prompts the Area is measured on
    @property
    def vrows(self) -> np.ndarray: ...  # validation prompts the Area is measured on too
    @property
    def pool(self) -> Any: ...  # selection.scored_pool.LabelledPool of the training LLMs on rest, then vrows


class TuningEngine(Protocol):
    """The selection engine a kind's tuning calls back into (selection.candidates.CandidateFits)."""

    data: Any  # selection.candidates.TuningData: X_train (n_tr, d), train_losses (n_tr, M), X_val, val_losses, seed

    def samples(self, n_val: int, purpose: str = "tune") -> Sequence[OnboardingSample]: ...
    def sample_order(self, n_val: int, purpose: str, r: int, k: int) -> np.ndarray: ...
    def sample_psi(self, k: int, n_val: int, purpose: str, r: int) -> Psi: ...
    def centroids(self, k: int) -> Centroids: ...
    def train_cluster(self, k: int) -> np.ndarray: ...
    def val_cluster(self, k: int) -> np.ndarray: ...
    def learned_map(self, k: int) -> Any: ...
    def val_map_phi(self, k: int) -> np.ndarray: ...
    def heldout_phi(self, k: int) -> np.ndarray: ...
    def onboarding_area(self, kind: str, k: int, n_val: int, strength: float = 0.0) -> float: ...
    def tune(self, kind: str, n_val: int | None = None) -> Tuned: ...
    def search(self, area_of: Callable[[int], float], values: list[int]) -> GridSearch: ...
    def area(self, gamma: np.ndarray, pool: Any) -> float: ...


class HeldOutState(Protocol):
    """A trial's or build's state a kind estimates held-out LLMs from (selection.state.TrialState)."""

    @property
    def fits(self) -> TuningEngine: ...  # read-only: the state's own CandidateFits
    X_train: np.ndarray  # (n_tr, d)
    X_test: np.ndarray  # (n_te, d)
    train_losses: np.ndarray  # (n_tr, M_tr)
    data: Any  # selection.data.RoutingData (models)

    def test_llm_val_losses(self, n_val: int) -> np.ndarray: ...
    def test_llm_names(self) -> list[str]: ...
    def test_val_sims(self, rows: slice = ...) -> np.ndarray: ...
    def test_onehot(self, k: int) -> np.ndarray: ...
    def test_map_phi(self, k: int) -> np.ndarray: ...
    def centroids(self, k: int) -> Centroids: ...


@dataclass(frozen=True, eq=False)
class FullScale:
    """What a build tuned on samples gives a served router to measure itself on every prompt."""

    train_sampled: bool  # the tuning used a sample of the training prompts
    val_sampled: bool  # ... of the validation prompts
    # Psi (K, these models) of every validation prompt assigned with these centroids: the build's DuckDB group-by
    # over the results (pipeline.pool.psi_data.val_psi), so the driver holds no validation prompt's scores.
    val_psi: Callable[[Centroids, int, Sequence[str]], Psi]
    refit_clusters: Callable[[int], Centroids]  # K-means with this K on every training prompt (Dask)


class RouterKind:
    """One router kind; subclasses set the class attributes and override the methods their kind needs."""

    name: str = ""
    value_label: str = "K"  # what its value counts: "K" clusters, "k" neighbours
    title: str = ""  # how reports name it
    paper_baseline: bool = False  # the paper's baseline (K-NN): reports list it before UniRoute's kinds
    transfers: bool = False  # has a transfer variant (experiments.transfer): gamma_from_training_labels
    pairwise_variant: str | None = None  # "clusters" or "neighbours": how pairwise transfer fits it from battles
    # Its served router's clusters are K-means with its tuned K, refitted on every training prompt where the tuning
    # sampled them (full_scale): a build may start that refit as soon as the K is chosen (pipeline.build.refits).
    refits_clusters: bool = False
    report_mark: str = ""  # marks an Area significantly below this kind's in an evaluation's summary table
    quality_only: bool = False  # a candidate only where every model costs the same (applies_to); not run by default

    def applies_to(self, data: Any) -> bool:
        """Whether the kind is a candidate for this tuning data (selection.candidates.TuningData: costs, losses)."""
        return True

    # ---- tuning (the selection engine) -----------------------------------------------------------------
    def ladder(self, n_val: int, n_train: int) -> list[int]:
        """The values its hyper-parameter is searched on."""
        raise NotImplementedError(f"router kind {self.name!r} has no ladder")

    def tune(self, engine: TuningEngine, n_val: int) -> Tuned:
        """Its hyper-parameters chosen by simulated onboarding with the first n_val validation prompts."""
        values = self.ladder(n_val, engine.data.X_train.shape[0])
        search = engine.search(lambda v: engine.onboarding_area(self.name, v, n_val), values)
        return Tuned(self.name, search.chosen, search=search)

    def onboarding_gammas(self, engine: TuningEngine, value: int, n_val: int, strength: float,
                          purpose: str) -> list[tuple[np.ndarray, Any]]:
        """Per repeat, (gamma (n_measured, M), pool) of the kind onboarded on the n_val sampled prompts."""
        raise NotImplementedError

    def untuned(self, n_val: int, n_train: int) -> Tuned | None:
        """Its value without training LLMs to tune on, or None when it cannot be built without them."""
        return None

    # ---- held-out LLMs ---------------------------------------------------------------------------------
    def test_gamma(self, state: HeldOutState, tuned: Tuned, n_val: int) -> np.ndarray:
        """(n_te, M_te) what its served router estimates for the test LLMs onboarded on n_val val prompts."""
        raise NotImplementedError

    def test_record(self, state: HeldOutState, tuned: Tuned, n_val: int) -> dict[str, Any]:
        """What an evaluation records of its served router for the test LLMs besides its value (default: nothing)."""
        return {}

    def gamma_from_training_labels(self, state: HeldOutState, value: int) -> np.ndarray:
        """(n_te, M) gamma of the test prompts with every LLM's table measured on the training prompts."""
        raise NotImplementedError(f"router kind {self.name!r} has no transfer variant")

    # ---- the served router -----------------------------------------------------------------------------
    def served_router(self, engine: TuningEngine, tuned: Tuned, embedder_id: str, models: Sequence[str],
                      losses: np.ndarray, costs: np.ndarray, val_prompt_ids: Sequence[str]) -> RoutingRule:
        """Its router over a pool from the pool's losses (n_val, P) on the first n_val validation prompts."""
        raise NotImplementedError

    def full_scale(self, router: Any, scale: FullScale) -> Any:
        """The router measured on every prompt where the build tuned on samples (default: as it is)."""
        return router

    # ---- storage (serialize) ---------------------------------------------------------------------------
    def router_arrays(self, router: Any) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """(header fields, arrays) its router is stored as."""
        raise NotImplementedError

    def router_from_arrays(self, header: dict[str, Any], arrays: dict[str, np.ndarray]) -> RoutingRule:
        """Its router from a stored header and arrays (KeyError for a missing array)."""
        raise NotImplementedError


def _load_builtin_kinds() -> None:
    """Register the built-in kinds, in their order, before any other."""
    import importlib

    if _KINDS:
        return
    by_attr = {}
    for module, attr in _BUILTIN:
        kind = getattr(importlib.import_module(module), attr)
        _KINDS[kind.name] = by_attr[attr] = kind
    _DEFAULT[:] = [by_attr[attr].name for attr in _DEFAULT_BUILTIN]


def register_kind(kind: RouterKind, default: bool = False) -> RouterKind:
    """Add a kind after those registered (default: the kind the selection serves unless another beats it)."""
    _load_builtin_kinds()
    if not kind.name or kind.name in _KINDS:
        raise ValueError(f"router kind name {kind.name!r} is empty or taken (known: {', '.join(_KINDS)})")
    _KINDS[kind.name] = kind
    if default:
        _DEFAULT.insert(0, kind.name)
    return kind


def unregister_kind(name: str) -> None:
    """Remove a kind (tests that register their own)."""
    if name not in _KINDS or name in _DEFAULT:
        raise ValueError(f"router kind {name!r} is not registered or is the default")
    del _KINDS[name]


def router_kinds() -> tuple[RouterKind, ...]:
    """Every registered kind, in registration order."""
    _load_builtin_kinds()
    return tuple(_KINDS.values())


def kind_names() -> tuple[str, ...]:
    """The registered kinds' names, in registration order."""
    return tuple(k.name for k in router_kinds())


def router_kind(name: str) -> RouterKind:
    """The registered kind of this name; ValueError naming the known kinds otherwise."""
    _load_builtin_kinds()
    if name not in _KINDS:
        raise ValueError(f"unknown router kind {name!r}; choose from {list(_KINDS)}")
    return _KINDS[name]


def default_kind() -> str:
    """The kind the selection serves unless another kind beats it clearly."""
    return default_kinds()[0]


def default_kinds() -> tuple[str, ...]:
    """The default kind, then the kinds served by default in its place where it is not a candidate."""
    _load_builtin_kinds()
    return tuple(_DEFAULT)
