"""What text of each prompt is embedded (the embeddings come through the store's cache: operations.evaluation)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

log = logging.getLogger(__name__)

PROMPT_PARTS = ("full", "last-block")


def prompt_texts(prompts: Sequence[str], part: str = "full") -> list[str]:
    """The text of each prompt to embed: all of it, or its last block (after the last blank line).

    `last-block` is for logs whose prompts carry few-shot demonstrations before the question (RouterBench's
    arc-challenge and winogrande): MiniLM reads only the first 256 tokens, which would be the shared
    demonstrations, so every prompt of such a task would embed alike. A prompt without a blank line is kept whole.
    """
    if part not in PROMPT_PARTS:
        raise ValueError(f"unknown prompt part {part!r}; choose from {list(PROMPT_PARTS)}")
    if part == "full":
        return list(prompts)
    out = []
    for text in prompts:
        blocks = [b for b in text.strip().split("\n\n") if b.strip()]
        out.append(blocks[-1].strip() if blocks else text)
    return out
