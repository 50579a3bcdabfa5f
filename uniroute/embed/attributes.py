"""Prompt-attribute embedder (paper: K-means Attributes): binary prompt attributes predicted from a frozen text
embedder by distilled logistic heads, phi(x) = sigmoid(V^T e(x) + b) in [0, 1]^A.

Attribute labels (binary, per prompt; the paper's seven difficulty attributes by default) come from a labels
file or from the annotator (embed.annotator). One logistic head per attribute is fitted on the labelled
prompts' frozen embeddings (sigmoid cross-entropy, as in the paper), so every prompt, labelled or not, gets
an attribute embedding. Deviation, documented: the embedder returns [phi(x), 1] scaled to unit length (dim
A + 1). The Embedder contract is unit rows (K-NN ranks neighbours by cosine); the constant coordinate keeps
how many attributes a prompt has, which normalising phi(x) alone would erase (0.1 everywhere and 0.9
everywhere would become the same point).

Shapes: base embeddings X (n, d) float32; labels (n, A) in {0, 1}; weights (d, A); output (n, A + 1) float32.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from uniroute.embed.base import check_texts, unit_rows

log = logging.getLogger(__name__)

ATTRIBUTES = (
    "specificity",
    "domain_knowledge",
    "complexity",
    "problem_solving",
    "creativity",
    "technical_accuracy",
    "real_world_application",
)
LABEL_KEY = "prompt_id"
HEAD_C = 1.0  # inverse ridge strength of each logistic head (scikit-learn's default)
CONSTANT_CLIP = 1e-3  # an attribute constant in the labels gets a bias-only head at logit(clipped rate)


@dataclass(frozen=True, eq=False)
class AttributeHeads:
    """Logistic heads on a frozen embedder: phi = sigmoid(X @ weights + bias)."""

    names: tuple[str, ...]  # (A,)
    weights: np.ndarray  # (d, A) float64
    bias: np.ndarray  # (A,) float64
    base_id: str  # the frozen embedder the heads read
    fingerprint: str = field(init=False)

    def __post_init__(self) -> None:
        digest = hashlib.sha256(self.base_id.encode())
        digest.update("\n".join(self.names).encode())
        digest.update(np.ascontiguousarray(self.weights, dtype=np.float64).tobytes())
        digest.update(np.ascontiguousarray(self.bias, dtype=np.float64).tobytes())
        object.__setattr__(self, "fingerprint", digest.hexdigest()[:12])

    @property
    def embedder_id(self) -> str:
        """Names the base embedder, the attributes and the fitted heads: another fit is another embedder."""
        return f"attributes:{self.fingerprint}:a{len(self.names)}:{self.base_id}"

    def probabilities(self, X: np.ndarray) -> np.ndarray:
        """(n, A) predicted probability of each attribute from base embeddings X (n, d)."""
        return 1.0 / (1.0 + np.exp(-(np.asarray(X, dtype=np.float64) @ self.weights + self.bias)))

    def transform(self, X: np.ndarray) -> np.ndarray:
        """(n, A + 1) float32 unit rows [phi(x), 1] / |[phi(x), 1]| (see the module docstring)."""
        phi = self.probabilities(X)
        return unit_rows(np.hstack([phi, np.ones((phi.shape[0], 1))]))


def fit_attribute_heads(X: np.ndarray, labels: np.ndarray, names: Sequence[str], base_id: str,
                        c: float = HEAD_C) -> AttributeHeads:
    """One logistic head per attribute on frozen embeddings X (n, d) with binary labels (n, A)."""
    from sklearn.linear_model import LogisticRegression

    X = np.asarray(X, dtype=np.float64)
    labels = np.asarray(labels)
    if labels.ndim != 2 or labels.shape != (X.shape[0], len(names)):
        raise ValueError(f"labels {labels.shape} must be (n, A) = ({X.shape[0]}, {len(names)})")
    if not np.isin(labels, (0, 1)).all():
        raise ValueError("attribute labels must be 0 or 1")
    if X.shape[0] < 2:
        raise ValueError(f"need at least 2 labelled prompts to fit attribute heads, got {X.shape[0]}")
    weights = np.zeros((X.shape[1], len(names)))
    bias = np.zeros(len(names))
    for j, name in enumerate(names):
        y = labels[:, j].astype(int)
        if y.min() == y.max():  # one class only: the head predicts its rate, whatever the prompt
            rate = np.clip(y.mean(), CONSTANT_CLIP, 1 - CONSTANT_CLIP)
            bias[j] = np.log(rate / (1 - rate))
            log.warning("attribute %r is %d on every labelled prompt: its head is a constant", name, y[0])
            continue
        head = LogisticRegression(C=c, max_iter=2000).fit(X, y)
        weights[:, j], bias[j] = head.coef_[0], head.intercept_[0]
    return AttributeHeads(tuple(names), weights, bias, base_id)


@dataclass(frozen=True, eq=False)
class AttributeEmbedder:
    """An Embedder: the frozen base embedder followed by the attribute heads."""

    base: Any  # an Embedder
    heads: AttributeHeads
    progress: bool = True
    dim: int = field(init=False)
    embedder_id: str = field(init=False)

    def __post_init__(self) -> None:
        if self.base.embedder_id != self.heads.base_id:
            raise ValueError(f"heads were fitted on {self.heads.base_id!r}, not on {self.base.embedder_id!r}")
        object.__setattr__(self, "dim", len(self.heads.names) + 1)
        object.__setattr__(self, "embedder_id", self.heads.embedder_id)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """(n, A + 1) float32 unit rows."""
        return self.heads.transform(self.base.encode(check_texts(texts)))


def fit_attribute_embedder(base: Any, texts: Sequence[str], labels: np.ndarray,
                           names: Sequence[str] = ATTRIBUTES) -> AttributeEmbedder:
    """Distil heads on the base embedder's vectors of the labelled texts (the embeddings are not cached)."""
    heads = fit_attribute_heads(base.encode(check_texts(texts)), labels, names, base.embedder_id)
    return AttributeEmbedder(base, heads, progress=getattr(base, "progress", True))


def read_attribute_labels(path: Path, names: Sequence[str] | None = None) -> pd.DataFrame:
    """A labels file (CSV or Parquet): prompt_id and one 0/1 column per attribute; a bad cell names its row."""
    path = Path(path)
    try:
        frame = pd.read_parquet(path) if path.suffix.lower() in (".parquet", ".pq") else pd.read_csv(
            path, dtype={LABEL_KEY: str})
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: not a readable labels file: {exc}") from exc
    names = list(names) if names is not None else [c for c in frame.columns if c != LABEL_KEY]
    missing = [c for c in (LABEL_KEY, *names) if c not in frame.columns]
    if missing or not names:
        raise ValueError(f"{path}: a labels file needs {LABEL_KEY} and attribute columns; missing {missing}")
    for name in names:
        bad = ~frame[name].isin([0, 1, 0.0, 1.0, True, False])
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            value = frame[name].iloc[row]
            value = value.item() if isinstance(value, np.generic) else value
            raise ValueError(f"{path}: row {row + 1}: {name} = {value!r} is not 0 or 1")
    repeated = frame[LABEL_KEY].duplicated()
    if repeated.any():
        raise ValueError(f"{path}: prompt_id {frame[LABEL_KEY][repeated].iloc[0]!r} is labelled twice")
    out = frame[[LABEL_KEY, *names]].copy()
    out[LABEL_KEY] = out[LABEL_KEY].astype(str)
    out[names] = out[names].astype(int)
    return out.set_index(LABEL_KEY)
