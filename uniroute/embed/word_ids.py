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
import threading
from collections.abc import Sequence
from itertools import chain, pairwise
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
SLICE_TEXTS = 1024  # texts looked up at once: a slice's new chunks are remembered together (so at most this many
# texts' chunks past CHUNKS_KEPT)


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
        # The memory: chunk -> its number; chunk number k's ids are _store[_starts[k] : _starts[k] + _lengths[k]].
        # Numbers, not a tuple per chunk, so that a batch's ids are gathered by numpy in one step (a Python tuple
        # per chunk chained into an array was a third of tokenising a served batch).
        self.chunks: dict[str, int] = {}
        # One batch at a time reads and grows the memory: a server encodes on several threads, and a number read
        # before another thread started the memory again would gather that thread's ids.
        self._lock = threading.Lock()
        self._store = np.empty(1 << 14, dtype=np.int64)
        self._stored = 0
        self._starts = np.empty(1 << 12, dtype=np.int64)
        self._lengths = np.empty(1 << 12, dtype=np.int64)

    def flat_ids(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(every text's ids one after the other, int64) and (n + 1,) offsets: text i's ids are
        all[offsets[i]:offsets[i + 1]]."""
        if len(texts) <= SLICE_TEXTS:
            return self._slice_ids(texts)
        parts = [self._slice_ids(texts[lo : lo + SLICE_TEXTS]) for lo in range(0, len(texts), SLICE_TEXTS)]
        starts = np.cumsum([0] + [len(ids) for ids, _ in parts[:-1]])
        offsets = np.concatenate([[0]] + [part_offsets[1:] + start for (_, part_offsets), start
                                          in zip(parts, starts, strict=True)])
        return np.concatenate([ids for ids, _ in parts]), offsets

    def id_lists(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's token ids."""
        ids, offsets = self.flat_ids(texts)
        every, bounds = ids.tolist(), offsets.tolist()
        return [every[lo:hi] for lo, hi in pairwise(bounds)]

    def _slice_ids(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        texts = list(texts)
        joined = " ".join(texts)
        # One check of the whole batch: no text in it is non-ASCII or holds an added token's text (a batch without
        # a match has no text with one). Else text by text.
        if self.shortcut and joined.isascii() and not (self.added and self.added.search(joined)):
            return self._ascii_ids(texts, joined)
        plain = [self._plain(t) for t in texts]
        ascii_ids, ascii_offsets = self._ascii_ids([t for t, p in zip(texts, plain, strict=True) if p])
        rest = [t for t, p in zip(texts, plain, strict=True) if not p]
        library = iter(self.tokenizer.encode_batch_fast(rest, add_special_tokens=False) if rest else ())
        ascii_bounds = pairwise(ascii_offsets.tolist())
        pieces = []
        for p in plain:
            if p:
                lo, hi = next(ascii_bounds)
                pieces.append(ascii_ids[lo:hi])
            else:
                pieces.append(np.asarray(next(library).ids, dtype=np.int64))
        offsets = np.zeros(len(texts) + 1, dtype=np.int64)
        np.cumsum([len(piece) for piece in pieces], out=offsets[1:])
        return (np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int64)), offsets

    def _plain(self, text: str) -> bool:
        return self.shortcut and text.isascii() and not (self.added and self.added.search(text))

    def _ascii_ids(self, texts: list[str], joined: str | None = None) -> tuple[np.ndarray, np.ndarray]:
        """flat_ids of ASCII texts without an added token's text, through the memory of chunks."""
        if not (" ".join(texts) if joined is None else joined).isprintable():  # a control, tab or line break (rare)
            texts = [t if t.isprintable() else t.translate(_CONTROLS) for t in texts]
        # Whitespace always separates words, so a whitespace-separated chunk ("sin(x)?") has its ids whatever
        # surrounds it: the chunks are what is remembered (fewer look-ups than words). After the controls are gone,
        # ASCII whitespace is space, tab, CR and LF.
        chunk_lists = list(map(str.split, map(str.lower, texts)))
        chunks = list(chain.from_iterable(chunk_lists))
        text_chunks = np.zeros(len(texts) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, chunk_lists), dtype=np.int64, count=len(texts)), out=text_chunks[1:])
        with self._lock:
            numbers = self._numbers(chunks)
            lengths = self._lengths[numbers]
            chunk_offsets = np.zeros(len(chunks) + 1, dtype=np.int64)  # each chunk's first token in the batch
            np.cumsum(lengths, out=chunk_offsets[1:])
            # Token g of the batch, the k-th of chunk c, is stored at _starts[c] + k = _starts[c] - chunk_offsets[c]
            # + g.
            where = np.repeat(self._starts[numbers] - chunk_offsets[:-1], lengths) + np.arange(chunk_offsets[-1])
            ids = self._store[where]
        offsets = chunk_offsets[text_chunks]
        # The library truncates on the left after tokenising (wordpiece_tokenizer): the last max_tokens ids.
        if self.max_tokens is not None and len(texts) and int(np.diff(offsets).max()) > self.max_tokens:
            ids, offsets = _last(ids, offsets, self.max_tokens)
        return ids, offsets

    def _numbers(self, chunks: list[str]) -> np.ndarray:
        """Under the lock: each chunk's number in the memory, the new ones tokenised and remembered (a slice of
        texts whose new chunks would overflow CHUNKS_KEPT starts the memory again)."""
        numbers = list(map(self.chunks.get, chunks))
        if None in numbers:
            new = [chunk for chunk in dict.fromkeys(chunks) if chunk not in self.chunks]
            if len(self.chunks) + len(new) > CHUNKS_KEPT:
                self.chunks, self._stored = {}, 0
                new = list(dict.fromkeys(chunks))
            for chunk in new:
                self._remember(chunk)
            numbers = list(map(self.chunks.__getitem__, chunks))
        return np.fromiter(numbers, dtype=np.int64, count=len(chunks))

    def _remember(self, chunk: str) -> None:
        """A chunk's ids: each of its words (a run of letters and digits, or one punctuation mark) through the
        library's WordPiece model, stored under the chunk's next number."""
        ids = [token.id for word in _WORDS.findall(chunk) for token in self.tokenizer.model.tokenize(word)]
        number, start = len(self.chunks), self._stored
        if number >= len(self._starts):
            self._starts = np.resize(self._starts, 2 * len(self._starts))
            self._lengths = np.resize(self._lengths, 2 * len(self._lengths))
        if start + len(ids) > len(self._store):
            self._store = np.resize(self._store, 2 * (start + len(ids)))
        self._store[start : start + len(ids)] = ids
        self._starts[number], self._lengths[number] = start, len(ids)
        self._stored = start + len(ids)
        self.chunks[chunk] = number


def _last(ids: np.ndarray, offsets: np.ndarray, kept: int) -> tuple[np.ndarray, np.ndarray]:
    """flat_ids with each text's last `kept` ids only."""
    lengths = np.diff(offsets)
    position = np.arange(len(ids)) - np.repeat(offsets[:-1], lengths)  # each id's place in its text
    keep = position >= np.repeat(lengths - kept, lengths)
    new_offsets = np.zeros_like(offsets)
    np.cumsum(np.minimum(lengths, kept), out=new_offsets[1:])
    return ids[keep], new_offsets


def _state(part: Any) -> Any:
    """A tokenizer part's configuration as the library serialises it (None when the tokenizer has no such part)."""
    return None if part is None else json.loads(part.__getstate__())


@functools.lru_cache(maxsize=8)
def word_piece_ids(model_dir: str, max_tokens: int | None) -> WordPieceIds:
    """The WordPieceIds of wordpiece_tokenizer(model_dir, max_tokens), one per process (its memory of chunks too)."""
    return WordPieceIds(wordpiece_tokenizer(model_dir, max_tokens), max_tokens)
