"""MiniLM's WordPiece tokenizer through the `tokenizers` library: the same token ids as sentence-transformers,
without importing torch or transformers (routing latency is the point of the ONNX and static embedders)."""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from tokenizers import Encoding, Tokenizer

log = logging.getLogger(__name__)


@functools.lru_cache(maxsize=8)
def wordpiece_tokenizer(model_dir: str, max_tokens: int | None) -> Tokenizer:
    """The tokenizer of the model in model_dir; a sequence over max_tokens loses tokens on the LEFT.

    `encode_batch(texts)` adds [CLS] and [SEP] after truncation, counted in max_tokens, exactly as
    sentence-transformers with `truncation_side = "left"` does (tested token for token);
    `encode_batch(texts, add_special_tokens=False)` keeps max_tokens real tokens. tokenizer.json carries the
    exporter's padding and truncation (fixed 128), which transformers overrides per call: replaced here.
    """
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(Path(model_dir) / "tokenizer.json"))
    tokenizer.no_padding()
    if max_tokens is None:
        tokenizer.no_truncation()
    else:
        tokenizer.enable_truncation(max_length=max_tokens, direction="left", strategy="longest_first")
    return tokenizer


def padded_ids(encodings: Sequence[Encoding], pad_id: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(n, longest) int64 token ids right-padded with pad_id, and the (n, longest) int64 attention mask."""
    longest = max((len(e.ids) for e in encodings), default=0)
    ids = np.full((len(encodings), longest), pad_id, dtype=np.int64)
    mask = np.zeros((len(encodings), longest), dtype=np.int64)
    for row, encoding in enumerate(encodings):
        ids[row, : len(encoding.ids)] = encoding.ids
        mask[row, : len(encoding.ids)] = 1
    return ids, mask
