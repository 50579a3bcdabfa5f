"""Decision records: what every serving path (`uniroute route`, `route --file`, the MLflow pyfunc, the Python
API) says about each prompt it routed, in a versioned shape that the spool (pipeline/serving/spool.py) writes as JSON
lines and the inbox loads into the `decisions` table (ingest/decisions.py).

A record holds what replay and the traffic views need later and no user text unless asked: the prompt's sha256,
its embedding as float16 bytes (base64 in JSON), its cluster and distance to the nearest centroid (drift), the
chosen model, its fall-backs, the setting, the expected score and cost when the routed frame carries them, and
the probability with which the chosen model was picked (1 unless exploration is on).
"""

from __future__ import annotations

import base64
import binascii
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from uniroute.errors import UnirouteError
from uniroute.ingest.decision_checks import RECORD_KIND, RECORD_VERSION, SOURCES

if TYPE_CHECKING:  # a one-prompt `uniroute route` imports this module without pandas or the settings' pydantic
    import pandas as pd

    from uniroute.environment import QuickSettings
    from uniroute.routers.serialize import AnyRouter
    from uniroute.settings import Settings

# The record's shape is versioned in ingest/decisions.py (RECORD_VERSION), whose reader refuses a newer version
# than it knows; bump it when a field changes meaning or disappears (an added optional field needs no bump).
SCHEMA_VERSION = RECORD_VERSION
# Fields every routed frame carries (ranked fall-backs, expected score and cost of the model served:
# routers.explain.RouteTerms.summary); a frame without them (built by hand) gets nulls, so records keep one shape.
OPTIONAL_FRAME_FIELDS = ("fallbacks", "expected_score", "expected_cost")
NEIGHBOURS_SHOWN = 5  # a K-NN record names its nearest reference prompts, up to this many


class RecordingError(UnirouteError, ValueError):
    """A recording setting that cannot be used (an exploration share outside [0, 1], an unknown source)."""


@dataclass(frozen=True)
class Recording:
    """How decisions are recorded: whether at all, with the prompt text or not, and with what exploration."""

    enabled: bool = True
    keep_prompt: bool = False  # the prompt's text in the record: off unless the user opts in
    explore_share: float = 0.0  # share of prompts routed at random among the near-best models (0: never)
    explore_margin: float = 0.02  # near-best: total (expected loss + lambda * cost) within this of the best
    seed: int | None = None  # exploration's random stream (None: fresh entropy each call)

    def __post_init__(self) -> None:
        if not 0.0 <= float(self.explore_share) <= 1.0:
            raise RecordingError(f"the exploration share must lie in [0, 1], not {self.explore_share!r}")
        if not float(self.explore_margin) >= 0.0:
            raise RecordingError(f"the exploration margin must be >= 0, not {self.explore_margin!r}")


def recording_of(settings: Settings | QuickSettings) -> Recording:
    """How the user's settings say decisions are recorded (UNIROUTE_RECORD_DECISIONS, _RECORD_PROMPTS, ...)."""
    return Recording(settings.record_decisions, settings.record_prompts, settings.explore_share,
                     settings.explore_margin)


@dataclass(frozen=True)
class Served:
    """Where a batch of decisions came from: the serving path and what answered."""

    source: str  # cli, file, pyfunc, api
    router_id: str
    embedder_id: str
    publication_version: str | None = None  # None: no publication answered (a stored version, a served model)

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise RecordingError(f"unknown decision source {self.source!r}: one of {', '.join(SOURCES)}")


def new_decision_ids(n: int) -> list[str]:
    """n fresh decision ids (random UUIDs, hex): unique across processes without coordination.

    Each is what uuid.uuid4().hex gives (16 random bytes, the version and variant bits set), drawn for the batch at
    once: a uuid4 object per prompt was a quarter of deciding a served batch of 100."""
    raw = bytearray(os.urandom(16 * n))
    raw[6::16] = bytes(b & 0x0F | 0x40 for b in raw[6::16])  # version 4
    raw[8::16] = bytes(b & 0x3F | 0x80 for b in raw[8::16])  # the RFC 4122 variant
    text = raw.hex()
    return [text[i : i + 32] for i in range(0, 32 * n, 32)]


def embedding_of(text: str) -> np.ndarray:
    """The float32 row of a record's embedding: float16 little-endian bytes (half float32's size), base64."""
    return np.frombuffer(base64.b64decode(text), dtype="<f2").astype(np.float32)


def centroid_distances(router: AnyRouter, X: np.ndarray) -> np.ndarray | None:
    """Each prompt's Euclidean distance to its nearest centroid, or None for a kind without centroids. The drift
    view (sql/schema/012_traffic_views.sql) compares it with the training prompts' distances to theirs."""
    centroids = router.psi_centroids()
    if centroids is None:
        return None
    centers = np.asarray(centroids.centers, dtype=np.float64)
    Xd = np.asarray(X, dtype=np.float64)
    sq = (Xd * Xd).sum(axis=1)[:, None] - 2.0 * Xd @ centers.T + (centers * centers).sum(axis=1)[None, :]
    return np.sqrt(np.maximum(sq.min(axis=1), 0.0))


def neighbour_summaries(router: AnyRouter, X: np.ndarray) -> list[str | None]:
    """For a kind that routes by neighbours (K-NN), each prompt's nearest reference prompt ids (its stand-in for a
    cluster), as text; None per prompt for a kind with clusters."""
    ids = router.neighbour_ids(X, NEIGHBOURS_SHOWN)
    return [None] * X.shape[0] if ids is None else list(ids)


def explored(router: AnyRouter, X: np.ndarray, lam: float, pool: Sequence[str] | None, chosen: np.ndarray,
             recording: Recording) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(chosen model index, propensity, explored flag) per prompt. On a share of prompts drawn at random the
    model is drawn uniformly among the near-best (total within explore_margin of the best); the propensity is
    the probability the policy had of choosing the logged model, so off-policy estimates can weigh by 1/p."""
    n = int(X.shape[0])
    if recording.explore_share <= 0.0 or n == 0:
        return chosen, np.ones(n), np.zeros(n, dtype=bool)
    rng = np.random.default_rng(recording.seed)
    candidates = router.pool_indices(pool)
    totals = router.gamma(X)[:, candidates] + lam * router.costs[candidates]  # (n, P)
    near = totals <= totals.min(axis=1, keepdims=True) + recording.explore_margin
    sizes = near.sum(axis=1)
    explore = rng.random(n) < recording.explore_share
    picks = chosen.copy()
    for i in np.nonzero(explore)[0]:
        picks[i] = candidates[rng.choice(np.nonzero(near[i])[0])]
    eps = recording.explore_share
    picked_near = near[np.arange(n), np.searchsorted(candidates, picks)]
    propensity = (1.0 - eps) * (picks == chosen) + eps * picked_near / sizes
    return picks, propensity, explore


def decision_records(frame: pd.DataFrame | Mapping[str, Sequence[Any]], X: np.ndarray, router: AnyRouter,
                     served: Served, texts: Sequence[str] | None = None, propensity: np.ndarray | None = None,
                     explore: np.ndarray | None = None, text_hashes: Sequence[str] | None = None,
                     ) -> list[dict[str, Any]]:
    """One record per row of a routed frame (decision_id, model, cluster, lam, budget, setting, and text_hash
    unless given; the optional explain columns when present), X its prompts' embeddings; texts only when the user
    opted in. Columns are read once as arrays (no per-row pandas: this runs on every served request). frame may
    also be the routed columns by name (route.decided_columns: the one-prompt CLI path, which imports no pandas)."""
    n = len(frame["decision_id"])
    distance = centroid_distances(router, X)
    neighbours = neighbour_summaries(router, X)
    now = datetime.now(UTC).replace(tzinfo=None).isoformat(timespec="microseconds")
    # A frame's columns, or the names. _listed: 3x faster than to_numpy(na_value=None); NA is checked per value.
    column = {name: _listed(frame[name]) for name in ("decision_id", "model", "cluster", "lam", "budget", "setting")}
    hashes = _listed(frame["text_hash"]) if text_hashes is None else list(text_hashes)
    missing = [None] * n
    # The numbers stay arrays for _numbers; the lists of fall-backs become a list of them.
    fallbacks, expected_score, expected_cost = (frame.get(name, missing) for name in OPTIONAL_FRAME_FIELDS)
    fallbacks = _listed(fallbacks)
    # Per batch, not per value: numpy's scalars and pandas' NA looked up once (a server records every request).
    propensities = [1.0] * n if propensity is None else np.asarray(propensity, dtype=np.float64).tolist()
    explored = [False] * n if explore is None else np.asarray(explore, dtype=bool).tolist()
    distances = None if distance is None else distance.tolist()
    na = getattr(sys.modules.get("pandas"), "NA", None)
    # Column by column, then one dict per row from a zip: a served batch of 100 spent most of its recording on
    # per-value calls. The values, their types and the fields' order are the same as one row at a time.
    clusters = [None if c is None or c is na else int(c) for c in column["cluster"]]
    # Rows with one ranking share one list of names (routers.explain.fallback_lists): each distinct list is read
    # once, and every row gets its own copy.
    names_of: dict[int, list[str]] = {}
    fallback_names = [None if f is None or f is na else list(names_of.get(id(f)) or names_of.setdefault(
        id(f), [str(m) for m in f])) for f in fallbacks]
    X16 = np.ascontiguousarray(X, dtype="<f2").tobytes()
    dim = int(X.shape[1])
    width = 2 * dim  # bytes per row
    embeddings = [binascii.b2a_base64(X16[lo : lo + width], newline=False).decode("ascii")  # base64, as b64encode
                  for lo in range(0, n * width, width)]
    rows = zip(column["decision_id"], hashes, clusters, neighbours, missing if distances is None else distances,
               column["model"], fallback_names, [float(v) for v in column["lam"]], _numbers(column["budget"], na),
               column["setting"], _numbers(expected_score, na), _numbers(expected_cost, na), propensities, explored,
               embeddings, missing if texts is None else texts, strict=True)
    records = [{
        "record": RECORD_KIND,
        "schema_version": SCHEMA_VERSION,
        "decision_id": decision_id,
        "decided_at": now,
        "source": served.source,
        "router_id": served.router_id,
        "publication_version": served.publication_version,
        "embedder_id": served.embedder_id,
        "text_hash": hashed,
        "cluster": cluster,
        "neighbours": neighbour,
        "centroid_distance": centroid_distance,
        "model": model,
        "fallbacks": fallback,
        "lam": lam,
        "budget": budget,
        "setting": setting,
        "expected_score": score,
        "expected_cost": cost,
        "propensity": p,
        "explored": drawn,
        "embedding": embedding,
        "embedding_dim": dim,
        "prompt": prompt,
    } for (decision_id, hashed, cluster, neighbour, centroid_distance, model, fallback, lam, budget, setting, score,
           cost, p, drawn, embedding, prompt) in rows]
    return records


def _listed(values: Any) -> list:
    """A column as a list: a Series' or an array's tolist, or the list itself."""
    return values.tolist() if hasattr(values, "tolist") else list(values)


def _numbers(values: Sequence[Any] | np.ndarray, na: Any) -> list[float | None]:
    """Each value as a float, None for None, NA (na: pandas' NA, None when pandas is not imported) or NaN."""
    if isinstance(values, np.ndarray) and values.dtype.kind == "f":  # the routed columns: no value is None or NA
        floats = values.astype(np.float64).tolist()
        return [None if v != v else v for v in floats] if np.isnan(values).any() else floats
    out: list[float | None] = []
    values = _listed(values)
    for value in values:
        if value is None or value is na:
            out.append(None)
        else:
            value = float(value)
            out.append(None if value != value else value)  # NaN is the one float unequal to itself
    return out
