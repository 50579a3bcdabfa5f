"""The torch-free WordPiece tokenizer gives sentence-transformers' token ids, left truncation included."""

from __future__ import annotations

import numpy as np

from uniroute import embed
from uniroute.embed.tokens import padded_ids, wordpiece_tokenizer

TEXTS = [
    "What is the derivative of sin(x)?",
    "naïve café — 数学 equation, with ÄÖÜ and an emoji 🙂",
    "",
    "Worked example about the Roman provinces. " * 80 + "Question: how do I bake sourdough bread?",
]


def test_token_ids_match_sentence_transformers() -> None:
    from transformers import AutoTokenizer

    reference = AutoTokenizer.from_pretrained(str(embed.minilm_path()))
    reference.truncation_side = "left"  # as MiniLMEmbedder sets it
    expected = reference(TEXTS, truncation=True, max_length=embed.MINILM_MAX_TOKENS)["input_ids"]
    ours = wordpiece_tokenizer(str(embed.minilm_path()), embed.MINILM_MAX_TOKENS).encode_batch(TEXTS)
    assert [e.ids for e in ours] == expected
    assert len(ours[3].ids) == 256 and ours[3].ids[0] == 101 and ours[3].ids[-1] == 102
    assert "sourdough" in reference.decode(ours[3].ids)  # the end of the prompt is what survives


def test_without_special_tokens_and_without_truncation() -> None:
    tokenizer = wordpiece_tokenizer(str(embed.minilm_path()), None)
    long = tokenizer.encode(TEXTS[3], add_special_tokens=False)
    assert len(long.ids) > 256 and 101 not in long.ids and 102 not in long.ids
    last5 = wordpiece_tokenizer(str(embed.minilm_path()), 5).encode(TEXTS[3], add_special_tokens=False)
    assert last5.ids == long.ids[-5:]


def test_padded_ids() -> None:
    tokenizer = wordpiece_tokenizer(str(embed.minilm_path()), 256)
    ids, mask = padded_ids(tokenizer.encode_batch(["a b c", "a"]))
    assert ids.dtype == np.int64 and ids.shape == (2, 5)
    assert mask.tolist() == [[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]] and ids[1, 3:].tolist() == [0, 0]
