"""The per-word shortcut to MiniLM's WordPiece ids gives the `tokenizers` library's ids, token for token, on the
shared datasets' prompts and on hostile text, and the static embedder's vectors stay the bits they were."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from uniroute import embed
from uniroute.embed.base import unit_rows
from uniroute.embed.static import prompt_token_ids
from uniroute.embed.tokens import wordpiece_tokenizer
from uniroute.embed.word_ids import WordPieceIds

DATASETS = ("mmlu_pro_cot29", "routerbench_subset", "routerdc_model7")
# What the normaliser removes, joins, maps or matches before it: controls (VT and FF are removed, not spaces), DEL,
# special tokens' text in and out of case, words at and past WordPiece's 100-character limit, punctuation runs,
# accents, ligatures, case folds that change length, CJK, Unicode spaces and line separators, the replacement char.
HOSTILE = ["", " ", "\x00", "a\x0bb", "a\x0cb", "a\x1fb c\x7fd", "x\ty\nz\rw", "[MASK]", "[mask]", "a[MASK]b",
           "[CLS][SEP][PAD][UNK]", "[ MASK ]", "x" * 99, "x" * 100, "x" * 101, "y" * 300 + " z", "!!!???...",
           "don't `code` {x}~|^_\\ $5.00 #1 @me", "ÄÖÜ naïve", "数学 equation", "e\u0301", "\u00a0nbsp", "a\u2028b",
           "\ufffd", "İstanbul", "ǅ", "Straße", "ﬁle", "x\x85y", "tab\u3000ideographic space"]


RANDOM_HOSTILE = 300


def hostile_texts(n: int, seed: int = 0) -> list[str]:
    """HOSTILE and n random strings of ASCII (controls included) and of mixed ASCII and Unicode."""
    rng = random.Random(seed)
    texts = list(HOSTILE)
    for _ in range(n):
        texts.append("".join(chr(rng.randrange(0, 128)) for _ in range(rng.randrange(1, 200))))
        texts.append("".join(chr(rng.choice([rng.randrange(0, 128), rng.randrange(0, 0x3000)]))
                             for _ in range(rng.randrange(1, 60))))
    return texts


@pytest.fixture(scope="module")
def texts(shared_datasets: Path) -> list[str]:
    prompts = [pd.read_parquet(shared_datasets / name / "long.parquet", columns=["prompt"]).prompt for name in DATASETS]
    return pd.concat(prompts).drop_duplicates().tolist() + hostile_texts(RANDOM_HOSTILE)


@pytest.fixture(scope="module")
def library_ids(texts: list[str]) -> list[list[int]]:
    """Every text's ids from the library itself, untruncated (what both the ids and the vectors are checked
    against: encoding the 36k shared prompts is most of this file's time, so it is done once)."""
    tokenizer = wordpiece_tokenizer(str(embed.minilm_path()), None)
    return [e.ids for e in tokenizer.encode_batch_fast(texts, add_special_tokens=False)]


def test_the_libraries_ids_token_for_token(texts: list[str], library_ids: list[list[int]]) -> None:
    ids = WordPieceIds(wordpiece_tokenizer(str(embed.minilm_path()), None), None)
    assert ids.shortcut  # MiniLM's tokenizer is the one the shortcut is written for
    assert ids.id_lists(texts) == library_ids
    assert sum(t.isascii() for t in texts) > len(texts) / 2 and ids.chunks  # most prompts took the shortcut
    assert ids.id_lists(list(reversed(texts))) == list(reversed(library_ids))  # with every word remembered


TRUNCATED_SAMPLE = 3_000  # shared prompts per cap: the cut is the same code for each, and most are over 5 tokens


@pytest.mark.parametrize("max_tokens", [5, embed.MINILM_MAX_TOKENS])
def test_a_token_cap_keeps_the_same_ids_as_the_libraries_truncation(texts: list[str], max_tokens: int) -> None:
    hostile = len(HOSTILE) + 2 * RANDOM_HOSTILE  # the texts end with hostile_texts(RANDOM_HOSTILE)
    sample = random.Random(max_tokens).sample(texts[:-hostile], TRUNCATED_SAMPLE) + texts[-hostile:]
    tokenizer = wordpiece_tokenizer(str(embed.minilm_path()), max_tokens)
    expected = [e.ids for e in tokenizer.encode_batch_fast(sample, add_special_tokens=False)]
    assert sum(len(e) == max_tokens for e in expected) > TRUNCATED_SAMPLE / 10  # the cap cut many of them
    ids = WordPieceIds(tokenizer, max_tokens)
    assert ids.shortcut
    assert ids.id_lists(sample) == expected
    assert ids.id_lists(list(reversed(sample))) == list(reversed(expected))


def test_chunks_past_the_memory_start_it_again() -> None:
    from uniroute.embed import word_ids

    tokenizer = wordpiece_tokenizer(str(embed.minilm_path()), None)
    ids = WordPieceIds(tokenizer, None)
    texts = [f"word{i} shared" for i in range(word_ids.CHUNKS_KEPT + 10)]
    assert ids.id_lists(texts[-50:]) == [e.ids for e in tokenizer.encode_batch_fast(texts[-50:],
                                                                                       add_special_tokens=False)]
    ids.id_lists(texts)
    assert len(ids.chunks) <= word_ids.CHUNKS_KEPT


def test_another_normaliser_goes_through_the_library() -> None:
    from tokenizers import Tokenizer, normalizers

    tokenizer = wordpiece_tokenizer(str(embed.minilm_path()), None)
    cased = Tokenizer.from_str(tokenizer.to_str())
    cased.normalizer = normalizers.BertNormalizer(lowercase=False)
    ids = WordPieceIds(cased, None)
    assert not ids.shortcut
    assert ids.id_lists(["Paris IS Big"]) == [cased.encode("Paris IS Big", add_special_tokens=False).ids]


@pytest.mark.slow  # builds the static model file (session cache)
def test_static_vectors_are_the_librarys_bits(texts: list[str], library_ids: list[list[int]],
                                             built_embedders_cache: Path) -> None:
    static = embed.make_embedder("static", cache_dir=built_embedders_cache, progress=False)
    vectors, used = static.table()
    library = [np.asarray(ids, dtype=np.int64) for ids in library_ids]
    # The reference sum: each text's own rows added in order (zero for none), not the code under test's gather.
    table = np.asarray(vectors)
    expected = unit_rows(np.stack([table[ids[used[ids]]].sum(axis=0) if used[ids].any()
                                   else np.zeros(table.shape[1], dtype=np.float32) for ids in library]))
    got = prompt_token_ids(texts, used)
    assert all(np.array_equal(a, b[used[b]]) for a, b in zip(got, library, strict=True))
    assert np.array_equal(static.encode(texts).view(np.uint32), expected.view(np.uint32))  # bit for bit: -0.0 too


def test_threads_sharing_the_memory_get_their_own_ids(monkeypatch) -> None:
    """A server encodes on several threads through one memory, which starts again when full: each thread's texts
    still get the library's ids."""
    from concurrent.futures import ThreadPoolExecutor

    from uniroute.embed import word_ids

    monkeypatch.setattr(word_ids, "CHUNKS_KEPT", 300)  # the memory starts again every few batches
    tokenizer = wordpiece_tokenizer(str(embed.minilm_path()), None)
    ids = WordPieceIds(tokenizer, None)
    rng = random.Random(0)
    batches = [[" ".join(f"w{rng.randrange(5000)}x{rng.randrange(50)}" for _ in range(rng.randrange(1, 30)))
                for _ in range(20)] for _ in range(200)]
    expected = [[e.ids for e in tokenizer.encode_batch_fast(b, add_special_tokens=False)] for b in batches]
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(ids.id_lists, batches))
    assert got == expected
