"""A static (model2vec-style) embedder distilled once, offline, from the local MiniLM: a prompt's vector is the
normalised sum of its tokens' rows in one table. No transformer runs at encode time, so no torch either.

The distillation follows model2vec's `distill` (MinishLab/model2vec, model2vec/distill/distillation.py and
inference.py, version 0.8): every vocabulary token is run through the teacher as `[CLS] token [SEP]` and the
three output states are mean-pooled; `[unusedN]` tokens are dropped; PCA reduces the rows (256 dimensions by
default); each row is then weighted by SIF, a / (a + p(token)), with p estimated from Zipf's law on the
token's rank in the vocabulary. model2vec's own `distill` extra pins older transformers/tokenizers than this
project's, so the same steps are written here with the libraries we already have; the few deviations are
commented where they happen.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import tempfile
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path

import numpy as np

from uniroute.embed.artifacts import built_artifact
from uniroute.embed.base import check_texts, unit_rows
from uniroute.embed.minilm import minilm_path, minilm_version
from uniroute.embed.tokens import wordpiece_tokenizer
from uniroute.embed.word_ids import word_piece_ids

log = logging.getLogger(__name__)

TABLE_FILE = "static.npz"
STATIC_PCA_DIMS = 256        # model2vec's default
STATIC_SIF_COEFFICIENT = 1e-4  # model2vec's default
REMOVED_TOKENS = r"\[unused\d+\]"  # model2vec's default token_remove_pattern
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
# Vocabulary entries per teacher forward pass while distilling (each a 3-token sequence).
DISTIL_BATCH = 1024
GATHER_ROWS = 4096  # token rows gathered at a time to sum texts (4 MB at 256 dims): token_sums says why


def _static_recipe(pca_dims: int, sif_coefficient: float) -> dict[str, object]:
    """Everything that decides the built table (library versions from metadata: no torch import)."""
    return {
        "source": f"all-MiniLM-L6-v2@{minilm_version()}",
        "teacher_input": "[CLS] token [SEP], mean of the 3 output states",
        "removed": REMOVED_TOKENS,
        "pca_dims": pca_dims,
        "sif_coefficient": sif_coefficient,
        "torch": version("torch"),
        "transformers": version("transformers"),
        "scikit-learn": version("scikit-learn"),
    }


def teacher_token_vectors(token_ids: np.ndarray, cls_id: int, sep_id: int) -> np.ndarray:
    """(len(token_ids), 384) float32: MiniLM's mean output state over `[CLS] token [SEP]` for each token."""
    import torch
    from transformers import AutoModel

    bert = AutoModel.from_pretrained(str(minilm_path())).eval()
    threads = torch.get_num_threads()
    # One thread: the cores are shared. The table's bits still depend on the process's thread environment (a
    # rebuild under OMP_NUM_THREADS=1 got another fingerprint than one with the default threads: benchmarks/results/
    # embedding.json, `build`), which is why the fingerprint is in the id: a router refuses vectors from another build.
    torch.set_num_threads(1)
    parts = []
    try:
        with torch.inference_mode():
            for lo in range(0, len(token_ids), DISTIL_BATCH):
                middle = torch.as_tensor(token_ids[lo : lo + DISTIL_BATCH], dtype=torch.long)[:, None]
                ids = torch.cat([torch.full_like(middle, cls_id), middle, torch.full_like(middle, sep_id)], dim=1)
                hidden = bert(input_ids=ids, attention_mask=torch.ones_like(ids),
                              token_type_ids=torch.zeros_like(ids)).last_hidden_state  # (b, 3, 384)
                parts.append(hidden.mean(dim=1).numpy())
    finally:
        torch.set_num_threads(threads)
    return np.concatenate(parts).astype(np.float32)


def sif_weights(n: int, sif_coefficient: float) -> np.ndarray:
    """(n,) SIF weights a / (a + p_r) with Zipf probabilities p_r proportional to 1 / (r + 2), r = 0..n-1."""
    inv_rank = 1.0 / np.arange(2, n + 2)
    return sif_coefficient / (sif_coefficient + inv_rank / inv_rank.sum())


def distil_static(folder: Path, pca_dims: int, sif_coefficient: float) -> None:
    """Write TABLE_FILE into folder: `vectors` (vocabulary, pca_dims) float32 rows and `used` (vocabulary,) bool."""
    from sklearn.decomposition import PCA

    vocab = wordpiece_tokenizer(str(minilm_path()), None).get_vocab()  # token -> id
    kept = kept_token_ids(vocab)
    log.info("distilling a static table: %d tokens through MiniLM", len(kept))
    teacher = teacher_token_vectors(kept, vocab["[CLS]"], vocab["[SEP]"])  # (kept, 384)
    # Deviation: model2vec fits PCA on every kept row, special tokens included; those five rows are never
    # summed here (see `used`), so leaving them in or out changes the fit negligibly. We keep model2vec's rows.
    reduced = PCA(n_components=pca_dims, svd_solver="full").fit_transform(teacher.astype(np.float64))
    # Zipf rank = position in the vocabulary once [unusedN] are removed (WordPiece ids run roughly by frequency).
    weighted = reduced * sif_weights(len(reduced), sif_coefficient)[:, None]
    vectors = np.zeros((len(vocab), pca_dims), dtype=np.float32)
    vectors[kept] = weighted
    used = np.zeros(len(vocab), dtype=bool)
    used[kept] = True
    # Deviation: model2vec drops only [UNK] from a sentence's tokens (and adds no [CLS]/[SEP]); [PAD] and [MASK]
    # can still appear when a prompt spells them out. They carry no meaning of the prompt, so they are dropped.
    used[[vocab[t] for t in SPECIAL_TOKENS]] = False
    # Deviation: float32, not model2vec's default float16, so the table is the distilled numbers themselves.
    np.savez(folder / TABLE_FILE, vectors=vectors, used=used)


def kept_token_ids(vocab: dict[str, int]) -> np.ndarray:
    """The ids of the tokens the table has rows for ([unusedN] removed), in id order: a token's position here is
    its Zipf rank, which its SIF weight comes from."""
    removed = re.compile(REMOVED_TOKENS)
    return np.array([i for t, i in sorted(vocab.items(), key=lambda item: item[1]) if not removed.fullmatch(t)])


@functools.lru_cache(maxsize=4)
def _table(table_file: str) -> tuple[np.ndarray, np.ndarray]:
    """(vocabulary, dim) float32 rows and (vocabulary,) bool used flags, loaded once per process.

    The rows are memory-mapped from a plain .npy copy beside the table (written on first use): a prompt reads only
    its tokens' rows, where unpacking the 30 MB npz was most of a one-prompt `uniroute route`. The numbers are
    the same bytes either way."""
    stat = Path(table_file).stat()  # a table rebuilt in place gets another copy
    plain = Path(f"{table_file}.{stat.st_size}-{stat.st_mtime_ns}.vectors.npy")
    if plain.is_file():
        with np.load(table_file, allow_pickle=False) as saved:
            used = saved["used"].astype(bool)
        vectors = np.load(plain, mmap_mode="r", allow_pickle=False)
        if vectors.dtype == np.float32 and vectors.shape[0] == used.shape[0] and vectors.flags.c_contiguous:
            return vectors, used
    with np.load(table_file, allow_pickle=False) as saved:
        vectors, used = np.ascontiguousarray(saved["vectors"], dtype=np.float32), saved["used"].astype(bool)
    try:  # atomically: a reader sees no copy or the whole copy; an unwritable folder only loses the speed-up
        handle, tmp = tempfile.mkstemp(dir=plain.parent, prefix=f".{plain.name}.")
        with os.fdopen(handle, "wb") as out:
            np.save(out, vectors, allow_pickle=False)
        os.replace(tmp, plain)
    except OSError:
        pass
    return vectors, used


@dataclass(frozen=True)
class StaticEmbedder:
    """Token-table embedder distilled from MiniLM; picklable (the table is loaded per process on first use)."""

    table_file: str
    fingerprint: str  # of the built table: a rebuilt, different table gets a different id
    dim: int
    pca_dims: int = STATIC_PCA_DIMS
    sif_coefficient: float = STATIC_SIF_COEFFICIENT
    max_tokens: int | None = None  # None: every token of the prompt; else the LAST max_tokens (as `minilm`)
    progress: bool = True
    embedder_id: str = field(init=False)

    def __post_init__(self) -> None:
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1 or None, got {self.max_tokens}")
        span = "all" if self.max_tokens is None else f"left{self.max_tokens}"
        ident = (f"static:all-MiniLM-L6-v2@{minilm_version()}:m2v-pca{self.pca_dims}-sif{self.sif_coefficient:g}"
                 f":{span}:d{self.dim}:{self.fingerprint}")
        object.__setattr__(self, "embedder_id", ident)

    def table(self) -> tuple[np.ndarray, np.ndarray]:
        """The token table and its used flags (cached per process)."""
        return _table(self.table_file)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """(n, dim) float32 unit vectors: the sum of each text's token rows; a text without tokens is zero."""
        texts = check_texts(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors, used = self.table()
        # The mean model2vec takes differs from the sum only in length, which unit_rows removes.
        return unit_rows(token_sums(vectors, *token_runs(texts, used, self.max_tokens)))


def token_runs(texts: Sequence[str], used: np.ndarray, max_tokens: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Each text's WordPiece ids as the table sums them (the last max_tokens; None: all), unused ids dropped, one
    text after the other: (ids, (n + 1,) offsets), text i's ids ids[offsets[i]:offsets[i + 1]]."""
    # word_ids: the library's ids, most prompts without its per-character offsets (unused here), which were most of
    # a served decision; the rest through encode_batch_fast, as before.
    ids, offsets = word_piece_ids(str(minilm_path()), max_tokens).flat_ids(texts)
    kept = used[ids]
    kept_before = np.zeros(len(ids) + 1, dtype=np.int64)  # kept ids before each position
    np.cumsum(kept, out=kept_before[1:])
    return ids[kept], kept_before[offsets]


def prompt_token_ids(texts: Sequence[str], used: np.ndarray, max_tokens: int | None = None) -> list[np.ndarray]:
    """token_runs as one array per text."""
    ids, offsets = token_runs(texts, used, max_tokens)
    return np.split(ids, offsets[1:-1])


def token_sums(vectors: np.ndarray, ids: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """(n, dim) float32: for each text (token_runs: ids, offsets), the sum of the table rows (vocabulary, dim) of
    its token ids, added in order.

    One numpy sum per text over its rows, gathered a few thousand rows at a time: bit-identical to a sparse (n,
    vocabulary) count matrix times the table (both add the rows in order), without importing scipy.sparse (0.3 s,
    a fifth of a one-prompt `uniroute route`). (np.add.reduceat over the gather is not: it adds a segment's rows
    in another order, and the vectors must not depend on the batch. Padding each text to a common length with
    -0.0 rows and summing over the token axis keeps the bits too, but reads twice the rows: no faster.) The
    gather is bounded because one gather of a whole batch is a temporary of every token's row: 4.4 GB for the
    shared datasets' 35,455 prompts (4.4M tokens), 12 CPU-seconds of page faults where gathers of GATHER_ROWS
    take 0.6 s; a text's rows are one contiguous block either way, so its sum, and so its bits, are the same.
    """
    table = np.asarray(vectors)  # a memory map's rows read as a plain array's
    bounds = offsets.tolist()
    n = len(bounds) - 1
    out = np.zeros((n, table.shape[1]), dtype=np.float32)
    start = 0
    while start < n:
        # texts start..end-1: as many as GATHER_ROWS rows hold, at least one however long
        end = max(start + 1, bisect_right(bounds, bounds[start] + GATHER_ROWS, lo=start + 1) - 1)
        first = bounds[start]
        rows = table[ids[first:bounds[end]]]
        for text in range(start, end):
            lo, hi = bounds[text] - first, bounds[text + 1] - first
            if hi > lo:
                rows[lo:hi].sum(axis=0, out=out[text])
        start = end
    return out


def load_static(
    cache_dir: Path, max_tokens: int | None = None, pca_dims: int = STATIC_PCA_DIMS,
    sif_coefficient: float = STATIC_SIF_COEFFICIENT, progress: bool = True,
) -> StaticEmbedder:
    """The static embedder, distilling its table into cache_dir the first time (about a minute on one core)."""
    if not 0 < sif_coefficient < 1:
        raise ValueError(f"sif_coefficient must be in (0, 1), got {sif_coefficient}")
    if not 1 <= pca_dims <= 384:
        raise ValueError(f"pca_dims must be in [1, 384], got {pca_dims}")
    artifact = built_artifact(cache_dir, "static", _static_recipe(pca_dims, sif_coefficient),
                              functools.partial(distil_static, pca_dims=pca_dims, sif_coefficient=sif_coefficient))
    table_file = str(artifact.path / TABLE_FILE)
    embedder = StaticEmbedder(table_file, artifact.fingerprint, dim=pca_dims, pca_dims=pca_dims,
                              sif_coefficient=sif_coefficient, max_tokens=max_tokens, progress=progress)
    embedder.table()
    return embedder
