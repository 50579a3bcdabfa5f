"""What every embedder is: texts in, (n, dim) float32 unit rows out, and an id that names everything that
changes the vectors (so caches and routers never mix two embedders)."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)

MINILM_DIM = 384


@runtime_checkable
class Embedder(Protocol):
    """Anything that turns texts into (n, dim) float32 unit vectors and names itself (read-only: every embedder
    is a frozen dataclass)."""

    @property
    def embedder_id(self) -> str: ...
    @property
    def dim(self) -> int: ...
    @property
    def progress(self) -> bool: ...

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32, L2-normalised rows."""
        ...


def text_hash(text: str) -> str:
    """sha256 hex of the UTF-8 text: the embedding cache key, the same as prompts.text_hash."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """(n, d) float32 rows scaled to unit L2 norm; all-zero rows stay zero (they have no direction)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms > 0, norms, 1.0).astype(np.float32)


def check_texts(texts: Sequence[str]) -> list[str]:
    """The texts as a list; anything that is not a string is refused, naming its position."""
    texts = list(texts)
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"text {i} is a {type(text).__name__}, not a str: {text!r:.80}")
    return texts
