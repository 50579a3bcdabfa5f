"""MiniLM's WordPiece ids of a batch of prompts, as the `tokenizers` library gives them, at a tenth of its cost.

The library spends ~60 us on a 165-character prompt, most of it tracking every character's offsets through the
normaliser and the pre-tokeniser (offsets the static embedders never read): more than the rest of a served
decision. For an ASCII prompt BERT's normaliser and pre-tokeniser reduce to three string operations (drop the
control characters, lower-case, split into runs of letters and digits and single punctuation marks), and
whitespace always ends a word, so a whitespace-separated chunk's ids never depend on its neighbours: each
distinct chunk is tokenised once, by the library's own WordPiece model, and its ids are kept. Any other prompt (a
non-ASCII character, or the text of a special token, which the library matches before normalising) goes through
the library as before. The ids are the library's, token for token: tests/embed/test_word_ids.py compares them on
the shared datasets' prompts and hostile text.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from itertools import chain
from typing import TYPE_CHECKING, Any

import numpy as np

from uniroute.embed.tokens import wordpiece_tokenizer

if TYPE_CHECKING:
    from tokenizers import Tokenizer

# BERT's normaliser with clean_text removes the control characters (Unicode "other", of which ASCII has only Cc)
# except tab, newline and carriage return, which it maps to a space like every whitespace: the removed ones join
# their neighbours into one word. Lower-casing with strip_accents unset also strips accents: nothing in ASCII.
_CONTROLS = dict.fromkeys([*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F])
# BERT's pre-tokeniser: whitespace separates words and is dropped; every ASCII punctuation mark is a word alone.
_PUNCTUATION = r"!-/:-@\[-`{-~"
_WORDS = re.compile(rf"[^{_PUNCTUATION}]+|[{_PUNCTUATION}]")  # in a chunk without whitespace
BERT_NORMALIZER = {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                   "strip_accents": None, "lowercase": True}
CHUNKS_KEPT = 100_000  # distinct chunks remembered (~20 MB at most); past it the memory starts again: no input grows it


class WordPieceIds:
    """The token ids of texts under one tokenizer (wordpiece_tokenizer's: no special tokens added, the last
    max_tokens kept when it truncates), the same ids as `tokenizer.encode_batch_fast(texts,
    add_special_tokens=False)`, ASCII prompts read through a memory of the library's WordPiece ids per chunk."""

    def __init__(self, tokenizer: Tokenizer, max_tokens: int | None) -> None:
        self.tokenizer = tokenizer
        self.max_tokens = max_tokens
        added = tokenizer.get_added_tokens_decoder().values()
        # The shortcut holds for BERT's normaliser, pre-tokeniser and WordPiece only; any other tokenizer, or one
        # whose added tokens are matched after normalising, always goes through the library. Each part's own state
        # is read (microseconds): the whole tokenizer's JSON took 23 ms, a twentieth of a one-prompt `uniroute route`.
        self.shortcut = (_state(tokenizer.normalizer) == BERT_NORMALIZER
                         and _state(tokenizer.pre_tokenizer) == {"type": "BertPreTokenizer"}
                         and type(tokenizer.model).__name__ == "WordPiece" and not any(t.normalized for t in added))
        # Matched in the raw text before anything else: a text holding one goes through the library.
        self.added = re.compile("|".join(re.escape(t.content) for t in added)) if added else None
        self.chunks: dict[str, tuple[int, ...]] = {}

    def id_lists(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's token ids."""
        out: list[list[int] | None] = [self._ascii_ids(t) if self._plain(t) else None for t in texts]
        rest = [i for i, ids in enumerate(out) if ids is None]
        if rest:
            encodings = self.tokenizer.encode_batch_fast([texts[i] for i in rest], add_special_tokens=False)
            for i, encoding in zip(rest, encodings, strict=True):
                out[i] = encoding.ids
        return out  # type: ignore[return-value]  # every None was filled

    def _plain(self, text: str) -> bool:
        return self.shortcut and text.isascii() and not (self.added and self.added.search(text))

    def _ascii_ids(self, text: str) -> list[int]:
        if not text.isprintable():  # a control character, a tab or a line break (rare: checked at C speed first)
            text = text.translate(_CONTROLS)
        # Whitespace always separates words, so a whitespace-separated chunk ("sin(x)?") has its ids whatever
        # surrounds it: the chunks are what is remembered (fewer look-ups than words).
        chunks = text.lower().split()  # after the controls are gone, ASCII whitespace is space, tab, CR and LF
        known = list(map(self.chunks.get, chunks))
        pieces: list[tuple[int, ...]] = known if None not in known else [  # type: ignore[assignment]  # no None
            ids if ids is not None else self._chunk(chunk) for ids, chunk in zip(known, chunks, strict=True)]
        ids = list(chain.from_iterable(pieces))
        # The library truncates on the left after tokenising (wordpiece_tokenizer): the last max_tokens ids.
        return ids if self.max_tokens is None or len(ids) <= self.max_tokens else ids[-self.max_tokens:]

    def _chunk(self, chunk: str) -> tuple[int, ...]:
        """A chunk's ids: each of its words (a run of letters and digits, or one punctuation mark) through the
        library's WordPiece model, remembered."""
        ids = tuple(token.id for word in _WORDS.findall(chunk) for token in self.tokenizer.model.tokenize(word))
        if len(self.chunks) >= CHUNKS_KEPT:
            self.chunks.clear()
        self.chunks[chunk] = ids
        return ids


def _state(part: Any) -> Any:
    """A tokenizer part's configuration as the library serialises it (None when the tokenizer has no such part)."""
    return None if part is None else json.loads(part.__getstate__())


def flat_ids(id_lists: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """(all ids, int64) and (n + 1,) offsets: text i's ids are all[offsets[i]:offsets[i + 1]]."""
    lengths = np.fromiter((len(ids) for ids in id_lists), dtype=np.int64, count=len(id_lists))
    offsets = np.zeros(len(id_lists) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    flat = np.fromiter(chain.from_iterable(id_lists), dtype=np.int64, count=int(offsets[-1]))
    return flat, offsets


@functools.lru_cache(maxsize=8)
def word_piece_ids(model_dir: str, max_tokens: int | None) -> WordPieceIds:
    """The WordPieceIds of wordpiece_tokenizer(model_dir, max_tokens), one per process (its memory of chunks too)."""
    return WordPieceIds(wordpiece_tokenizer(model_dir, max_tokens), max_tokens)
