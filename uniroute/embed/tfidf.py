"""TF-IDF over words and word pairs, projected by a TruncatedSVD fitted on the training prompts."""

from __future__ import annotations

import hashlib
import io
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from uniroute.embed.base import MINILM_DIM, check_texts, unit_rows

if TYPE_CHECKING:
    from sklearn.feature_extraction.text import TfidfVectorizer

log = logging.getLogger(__name__)

# The vectorizer settings fit_tfidf uses; a saved embedder records them so it is rebuilt exactly.
VECTORIZER_SETTINGS: dict[str, Any] = {"lowercase": True, "ngram_range": [1, 2], "sublinear_tf": True}
STATE_FORMAT = "uniroute-tfidf-embedder"


@dataclass(frozen=True, eq=False)
class TfidfEmbedder:
    """TF-IDF over words and word pairs, projected by a TruncatedSVD fitted on the training prompts."""

    vectorizer: TfidfVectorizer
    components: np.ndarray  # (dim, vocabulary) float32, the SVD's right singular vectors
    fingerprint: str        # sha256 prefix of the fitted vocabulary, idf and components
    progress: bool = True
    dim: int = field(init=False)
    embedder_id: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "dim", int(self.components.shape[0]))
        object.__setattr__(self, "embedder_id", f"tfidf:svd@{self.fingerprint}:d{self.dim}")

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """(n, dim) float32 unit vectors; a text with no known word embeds as the zero vector."""
        texts = check_texts(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        sparse = self.vectorizer.transform(texts).astype(np.float32)  # (n, vocabulary)
        return unit_rows(sparse @ self.components.T)


def fit_tfidf(
    texts: Sequence[str], dim: int = MINILM_DIM, seed: int = 0, max_features: int = 20_000, progress: bool = True
) -> TfidfEmbedder:
    """TF-IDF + TruncatedSVD(dim) fitted on the texts; the id carries a fingerprint of the fit."""
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer

    texts = check_texts(texts)
    if len(texts) < 2:
        raise ValueError(f"fit_tfidf needs at least 2 texts, got {len(texts)}")
    vectorizer = TfidfVectorizer(
        lowercase=VECTORIZER_SETTINGS["lowercase"],
        ngram_range=tuple(VECTORIZER_SETTINGS["ngram_range"]),
        min_df=2 if len(texts) >= 1000 else 1,  # a word seen once cannot relate two prompts
        # A fitted TF-IDF embedder travels with every router built on it (tfidf_to_bytes), and its SVD components
        # are (dim, vocabulary) float32: 20k terms keep that at about 31 MB (50k would be 77 MB).
        max_features=max_features,
        sublinear_tf=VECTORIZER_SETTINGS["sublinear_tf"],
        dtype=np.float32,
    )
    sparse = vectorizer.fit_transform(texts)  # (n, vocabulary)
    # The SVD cannot have more components than the smaller side of the matrix; a small fit (tests, tiny
    # demos) gets a smaller dimension, which the id records.
    n_components = min(dim, sparse.shape[1] - 1, sparse.shape[0] - 1)
    if n_components < 1:
        raise ValueError(f"fit_tfidf: {len(texts)} texts with {sparse.shape[1]} distinct terms are too few to fit")
    if n_components < dim:
        log.info("tfidf: only %d SVD components fit on %d texts (asked for %d)", n_components, len(texts), dim)
    svd = TruncatedSVD(n_components=n_components, algorithm="randomized", n_iter=5, random_state=seed)
    svd.fit(sparse)
    components = np.ascontiguousarray(svd.components_, dtype=np.float32)
    digest = hashlib.sha256()
    digest.update("\n".join(vectorizer.get_feature_names_out()).encode("utf-8"))
    digest.update(np.ascontiguousarray(vectorizer.idf_, dtype=np.float32).tobytes())
    digest.update(components.tobytes())
    return TfidfEmbedder(vectorizer, components, digest.hexdigest()[:12], progress=progress)


def tfidf_to_bytes(embedder: TfidfEmbedder) -> bytes:
    """A fitted TF-IDF embedder as npz bytes of plain arrays (vocabulary, idf, SVD components), no pickle."""
    terms = embedder.vectorizer.get_feature_names_out()  # in column order
    header = {"format": STATE_FORMAT, "version": 1, "fingerprint": embedder.fingerprint, **VECTORIZER_SETTINGS}
    buffer = io.BytesIO()
    np.savez(buffer, header=np.array(json.dumps(header)), terms=np.asarray(terms, dtype=str),
             idf=np.asarray(embedder.vectorizer.idf_, dtype=np.float64), components=embedder.components)
    return buffer.getvalue()


def tfidf_from_bytes(data: bytes, progress: bool = False) -> TfidfEmbedder:
    """The embedder saved by tfidf_to_bytes; it encodes exactly as the fitted one did."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    with np.load(io.BytesIO(bytes(data)), allow_pickle=False) as saved:
        header = json.loads(str(saved["header"]))
        terms, idf, components = saved["terms"].tolist(), saved["idf"], saved["components"]
    if header.get("format") != STATE_FORMAT:
        raise ValueError(f"not a saved TF-IDF embedder (format {header.get('format')!r})")
    vectorizer = TfidfVectorizer(
        lowercase=header["lowercase"], ngram_range=tuple(header["ngram_range"]), sublinear_tf=header["sublinear_tf"],
        vocabulary={term: i for i, term in enumerate(terms)}, dtype=np.float32,
    )
    vectorizer.idf_ = idf  # sklearn's setter: the fitted idf, with the vocabulary above
    return TfidfEmbedder(vectorizer, np.ascontiguousarray(components, dtype=np.float32), header["fingerprint"],
                         progress=progress)
