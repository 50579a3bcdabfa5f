"""One prompt, one vector: every embedder gives a prompt the same vector alone and in shuffled batches of any size,
so a prompt routed alone (a gateway request) lands where `route --file` and the build put it, whatever the cache
saw first."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from uniroute import embed
from uniroute.embed.kinds import EMBEDDERS

from .test_embed import ALGEBRA, COOKING

pytestmark = pytest.mark.slow  # builds the static and ONNX model files (session cache) and loads MiniLM

# Prompts of very different lengths, so a padded batch would pad most of them (and a long one is left-truncated).
WORDS = ["the", "quadratic", "equation", "polynomial", "factor", "roots", "bake", "bread", "oven", "sauce", "garlic",
         "basil", "history", "empire", "province", "question", "answer", "explain", "why", "how", "many"]
TEXTS = ALGEBRA + COOKING + [" ".join(random.Random(n).choices(WORDS, k=n)) for n in (1, 3, 9, 27, 81, 200, 400)] + [
    "", "Question: how do I bake sourdough bread?"]
BATCH_SIZES = (1, 2, 5, 13, len(TEXTS))
# Bit-identical everywhere except torch's `minilm`: its padded float32 batches move a coordinate by ~1e-7 (7.6e-8
# at most on 80 RouterBench prompts), far below any gap between two centroid distances the routing compares.
TOLERANCE = {"minilm": 1e-6}


def shuffled_batches(n: int, size: int, seed: int) -> list[np.ndarray]:
    """The positions 0..n-1 shuffled and cut into batches of `size`."""
    order = np.random.default_rng(seed).permutation(n)
    return [order[lo : lo + size] for lo in range(0, n, size)]


def nearest(vectors: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """Each row's nearest centroid (Euclidean), as the cluster routers assign a prompt."""
    return np.argmin(((vectors[:, None, :] - centroids[None, :, :]) ** 2).sum(axis=2), axis=1)


@pytest.fixture(scope="module", params=EMBEDDERS)
def embedder(request: pytest.FixtureRequest, built_embedders_cache: Path) -> embed.Embedder:
    return embed.make_embedder(request.param, fit_texts=TEXTS, batch_size=16, progress=False,
                               cache_dir=built_embedders_cache)


def test_a_prompt_has_one_vector_alone_and_in_any_batch(embedder: embed.Embedder) -> None:
    alone = np.concatenate([embedder.encode([text]) for text in TEXTS])  # (n, dim)
    name = embedder.embedder_id.split(":", 1)[0]
    tolerance = TOLERANCE.get(name, 0.0)
    # Centroids where routing decisions are close: midpoints of prompts from the two topics and a few prompts.
    centroids = np.concatenate([alone[:6], (alone[:4] + alone[4:8]) / 2, alone[8:12]])
    for seed, size in enumerate(BATCH_SIZES):
        together = np.zeros_like(alone)
        for rows in shuffled_batches(len(TEXTS), size, seed):
            together[rows] = embedder.encode([TEXTS[i] for i in rows])
        if tolerance == 0.0:
            np.testing.assert_array_equal(together, alone, err_msg=f"{name}, batches of {size}")
        else:
            np.testing.assert_allclose(together, alone, rtol=0, atol=tolerance, err_msg=f"{name}, batches of {size}")
        np.testing.assert_array_equal(nearest(together, centroids), nearest(alone, centroids))


def test_onnx_runs_alone_at_any_thread_count(built_embedders_cache: Path) -> None:
    onnx = embed.make_embedder("minilm-onnx", cache_dir=built_embedders_cache, progress=False)
    one_thread = embed.MiniLMOnnxEmbedder(onnx.model_file, onnx.fingerprint, threads=1, progress=False)
    np.testing.assert_array_equal(one_thread.encode(TEXTS[::-1])[::-1], onnx.encode(TEXTS))
