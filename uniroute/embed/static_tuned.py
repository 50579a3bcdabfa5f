"""A static table fitted to the teacher's sentence vectors (model2vec's "tokenlearn" idea), in closed form.

`static` distils its table from MiniLM one token at a time (`[CLS] token [SEP]`), so a prompt's pooled row knows
nothing of how MiniLM reads tokens in context. Here the table is fitted so that a prompt's pooled row, pooled as
`static` pools it (the sum of its tokens' rows, then unit length), matches the teacher's (`minilm-onnx`) vector
of that prompt, on the prompts the embedder is fitted on:

1. base: the distilled static rows mapped into the teacher's 384-d space by one least-squares linear map W
   (static's 256-d pooled rows -> teacher vectors); a token never seen in fitting keeps this row, base @ W;
2. residual: a ridge regression from each prompt's token-count vector (SIF-weighted, scaled so the base
   prediction has unit length) to the teacher vector minus the base prediction, 384 targets at once, solved
   by conjugate gradients on the sparse normal equations (a fixed iteration cap: deterministic bits). The
   SIF weight is also on the residual (row = base + sif * r), so frequent tokens move least, as they weigh
   least in the pooling.

Fitted on texts only, never scores: the teacher vectors are label-free (see operations.evaluation).
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from uniroute.embed.base import check_texts, unit_rows
from uniroute.embed.minilm import minilm_path
from uniroute.embed.static import StaticEmbedder, kept_token_ids, prompt_token_ids, sif_weights, token_runs, token_sums
from uniroute.embed.tokens import wordpiece_tokenizer

if TYPE_CHECKING:
    import scipy.sparse as sp

log = logging.getLogger(__name__)

STATE_FORMAT = "uniroute-static-tuned-embedder"
# The residual's ridge strength (docs/decisions/0007-static-tuned-opt-in.md, RouterDC): 0.1 is within 0.02 of
# 0.01's held-out agreement with the teacher (Spearman .78 vs .81) at a third of the fit time, and fits the prompts
# it saw much less tightly than 0.01 (.81 vs .90): `uniroute evaluate` fits on every prompt, test prompts included,
# so a loose fit keeps its Areas closer to what a build serves on prompts outside its fit (new traffic).
RIDGE_ALPHA = 0.1
CG_ITERATIONS = 200   # cap on conjugate-gradient steps; converged well before on the shared datasets
CG_TOLERANCE = 1e-6   # relative residual norm per target at which a column stops moving
# Teacher vectors for texts: (teacher embedder, texts) -> (n, 384) unit rows; the cache when a store is open.
TeacherVectors = Callable[[Any, list[str]], np.ndarray]


@dataclass(frozen=True, eq=False)
class StaticTunedEmbedder:
    """A token table in the teacher's space, pooled as `static` pools; picklable (the table travels with it)."""

    vectors: np.ndarray   # (vocabulary, 384) float32
    used: np.ndarray      # (vocabulary,) bool: the tokens a prompt's sum includes (static's flags)
    base_id: str          # the static embedder it started from
    teacher_id: str       # the teacher whose vectors it was fitted to
    fingerprint: str      # sha256 prefix of the fitted table: it changes with the fitting prompts
    progress: bool = True
    dim: int = field(init=False)
    embedder_id: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "dim", int(self.vectors.shape[1]))
        base = self.base_id.rsplit(":", 1)[-1]
        teacher = self.teacher_id.rsplit(":", 1)[-1]
        object.__setattr__(self, "embedder_id", f"static-tuned:static@{base}:teacher@{teacher}:ridge"
                                                f":all:d{self.dim}:{self.fingerprint}")

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """(n, dim) float32 unit vectors: the sum of each text's token rows; a text without tokens is zero."""
        texts = check_texts(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return unit_rows(token_sums(self.vectors, *token_runs(texts, self.used)))


def vocabulary_sif(size: int, sif_coefficient: float) -> np.ndarray:
    """(size,) SIF weight of each vocabulary id as the static distillation gave it (rank among kept tokens)."""
    kept = kept_token_ids(wordpiece_tokenizer(str(minilm_path()), None).get_vocab())
    out = np.zeros(size, dtype=np.float64)
    out[kept] = sif_weights(len(kept), sif_coefficient)
    return out


def count_matrix(token_ids: Sequence[np.ndarray], vocabulary: int) -> sp.csr_matrix:
    """(n, vocabulary) float64 token counts."""
    # Here, not at the top: `uniroute route` loads this module through embed.portable, and scipy.sparse is 0.3 s
    # of a one-prompt route (embed.static); only fitting needs it.
    import scipy.sparse as sp

    indptr = np.cumsum([0] + [len(ids) for ids in token_ids])
    indices = np.concatenate(token_ids) if token_ids else np.zeros(0, np.int64)
    counts = sp.csr_matrix((np.ones(len(indices)), indices, indptr), shape=(len(token_ids), vocabulary))
    counts.sum_duplicates()
    return counts


def block_cg(X: sp.csr_matrix, B: np.ndarray, alpha: float, iterations: int, tolerance: float) -> np.ndarray:
    """(p, t) solution of (X'X + alpha I) R = B for every column at once (each column its own CG steps)."""
    R = np.zeros_like(B)
    residual = B.copy()
    direction = residual.copy()
    rr = np.einsum("ij,ij->j", residual, residual)
    stop = tolerance**2 * np.maximum(rr, 1e-300)
    for step in range(iterations):
        active = rr > stop
        if not active.any():
            log.info("static-tuned: conjugate gradients converged in %d steps", step)
            break
        product = X.T @ (X @ direction) + alpha * direction
        curvature = np.einsum("ij,ij->j", direction, product)
        step_size = np.where(active, rr / np.where(curvature > 0, curvature, 1.0), 0.0)
        R += direction * step_size
        residual -= product * step_size
        rr_new = np.einsum("ij,ij->j", residual, residual)
        direction = residual + direction * np.where(active, rr_new / np.where(rr > 0, rr, 1.0), 0.0)
        rr = rr_new
    return R


def fit_static_tuned(
    base: StaticEmbedder, teacher: Any, texts: Sequence[str], teacher_vectors: TeacherVectors | None = None,
    alpha: float = RIDGE_ALPHA, iterations: int = CG_ITERATIONS, progress: bool = True,
) -> StaticTunedEmbedder:
    """The base static table fitted to the teacher's vectors of texts (teacher_vectors: the cache; default encode)."""
    import scipy.sparse as sp  # only fitting needs it (count_matrix)

    texts = check_texts(texts)
    if len(texts) < 2:
        raise ValueError(f"fit_static_tuned needs at least 2 texts, got {len(texts)}")
    table, used = base.table()
    Y = np.asarray(teacher.encode(texts) if teacher_vectors is None else teacher_vectors(teacher, texts),
                   dtype=np.float64)  # (n, 384)
    token_ids = prompt_token_ids(texts, used)
    counts = count_matrix(token_ids, len(table))  # (n, vocabulary)
    pooled = counts @ table.astype(np.float64)     # (n, 256): static's rows before unit length
    # 1. The linear map of static's space into the teacher's, least squares over the prompts' unit rows.
    W = np.linalg.lstsq(unit_rows(pooled).astype(np.float64), Y, rcond=None)[0]  # (256, 384)
    mapped = table.astype(np.float64) @ W          # (vocabulary, 384): the rows unseen tokens keep
    # 2. The residual's ridge on the seen tokens' columns: scale each prompt so its base prediction has unit length.
    prediction = counts @ mapped
    scale = np.linalg.norm(prediction, axis=1)
    scale = np.where(scale > 0, scale, 1.0)
    seen = np.flatnonzero(np.asarray(counts.sum(axis=0)).ravel() > 0)
    sif = vocabulary_sif(len(table), base.sif_coefficient)[seen]
    X = sp.csr_matrix(sp.diags(1.0 / scale) @ counts[:, seen] @ sp.diags(sif))  # (n, seen)
    target = Y - prediction / scale[:, None]
    residual = block_cg(X, X.T @ target, alpha, iterations, CG_TOLERANCE)  # (seen, 384)
    vectors = mapped.copy()
    vectors[seen] += sif[:, None] * residual
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    digest = hashlib.sha256(vectors.tobytes())
    digest.update(used.tobytes())
    log.info("static-tuned: fitted %d token rows on %d prompts", len(seen), len(texts))
    return StaticTunedEmbedder(vectors, used, base.embedder_id, str(teacher.embedder_id),
                               digest.hexdigest()[:12], progress=progress)


def static_tuned_to_bytes(embedder: StaticTunedEmbedder) -> bytes:
    """The fitted table as npz bytes of plain arrays (no pickle): (vocabulary, 384) float32, about 47 MB."""
    header = {"format": STATE_FORMAT, "version": 1, "fingerprint": embedder.fingerprint,
              "base_id": embedder.base_id, "teacher_id": embedder.teacher_id}
    buffer = io.BytesIO()
    np.savez(buffer, header=np.array(json.dumps(header)), vectors=embedder.vectors, used=embedder.used)
    return buffer.getvalue()


def static_tuned_from_bytes(data: bytes, progress: bool = False) -> StaticTunedEmbedder:
    """The embedder saved by static_tuned_to_bytes; it encodes exactly as the fitted one did."""
    with np.load(io.BytesIO(bytes(data)), allow_pickle=False) as saved:
        header = json.loads(str(saved["header"]))
        if header.get("format") != STATE_FORMAT:
            raise ValueError(f"not a saved static-tuned embedder (format {header.get('format')!r})")
        vectors, used = np.ascontiguousarray(saved["vectors"], np.float32), saved["used"].astype(bool)
    return StaticTunedEmbedder(vectors, used, header["base_id"], header["teacher_id"], header["fingerprint"],
                               progress=progress)
