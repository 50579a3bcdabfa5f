"""Embedders (real MiniLM, real TF-IDF) and the embedding cache in a real DuckDB file."""

from __future__ import annotations

import logging
import pickle
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import embedded
from uniroute import embed, store

ALGEBRA = [
    "solve the quadratic equation for x and factor the polynomial",
    "find the roots of the polynomial equation by factoring",
    "simplify the algebraic expression and solve for the variable",
    "what value of x satisfies the linear equation",
]
COOKING = [
    "bake the bread in a hot oven until the crust is golden",
    "simmer the tomato sauce with garlic and fresh basil",
    "whisk the eggs with sugar and fold in the flour",
    "roast the vegetables with olive oil and salt",
]


class CountingEmbedder:
    """A real embedder wrapper that records every text it is asked to encode."""

    def __init__(self, inner: embed.Embedder) -> None:
        self.inner = inner
        self.embedder_id = inner.embedder_id
        self.dim = inner.dim
        self.progress = False
        self.seen: list[str] = []

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.seen.extend(texts)
        return self.inner.encode(texts)


@pytest.fixture(scope="module")
def minilm() -> embed.MiniLMEmbedder:
    return embed.make_embedder("minilm", batch_size=16, progress=False)


@pytest.fixture(scope="module")
def tfidf() -> embed.TfidfEmbedder:
    return embed.fit_tfidf(ALGEBRA + COOKING, dim=6, seed=0, progress=False)


def test_text_hash_is_sha256_hex() -> None:
    assert embed.text_hash("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert embed.text_hash("é") != embed.text_hash("e")


def test_minilm_shape_norm_and_semantics(minilm: embed.MiniLMEmbedder) -> None:
    X = minilm.encode(ALGEBRA + COOKING)
    assert X.shape == (8, 384) and X.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(X, axis=1), 1.0, atol=1e-5)
    sims = X @ X.T
    within = np.mean([sims[i, j] for i in range(4) for j in range(4) if i != j])
    within_cooking = np.mean([sims[i, j] for i in range(4, 8) for j in range(4, 8) if i != j])
    across = sims[:4, 4:].mean()
    assert within > across + 0.1 and within_cooking > across + 0.1
    # Each algebra prompt's nearest other prompt is an algebra prompt.
    np.fill_diagonal(sims, -1)
    assert (sims.argmax(axis=1)[:4] < 4).all() and (sims.argmax(axis=1)[4:] >= 4).all()


def test_minilm_truncates_from_the_left(minilm: embed.MiniLMEmbedder) -> None:
    prefix = ("Here is a worked example about the history of the Roman empire and its provinces. " * 30)[:2000]
    endings = [" Question: how do I bake sourdough bread?", " Question: what is the derivative of sin(x)?"]
    a, b = minilm.encode([prefix + endings[0], prefix + endings[1]])
    # Right truncation would embed only the identical 2000-character prefix: identical vectors.
    assert float(a @ b) < 0.99
    # The tail is what differs: each long prompt leans towards its own ending.
    qa, qb = minilm.encode(endings)
    assert float(a @ qa) > float(a @ qb) and float(b @ qb) > float(b @ qa)


def test_minilm_id_and_pickle(minilm: embed.MiniLMEmbedder) -> None:
    assert "minilm" in minilm.embedder_id and minilm.embedder_id.endswith(":d384")
    clone = pickle.loads(pickle.dumps(minilm))
    assert clone.embedder_id == minilm.embedder_id
    np.testing.assert_array_equal(clone.encode(ALGEBRA[:2]), minilm.encode(ALGEBRA[:2]))
    assert len(pickle.dumps(minilm)) < 10_000  # the weights are not pickled; workers re-load them


def test_tfidf_deterministic_per_seed_and_normalised(tfidf: embed.TfidfEmbedder) -> None:
    again = embed.fit_tfidf(ALGEBRA + COOKING, dim=6, seed=0, progress=False)
    assert again.embedder_id == tfidf.embedder_id
    X = tfidf.encode(ALGEBRA + COOKING)
    np.testing.assert_array_equal(X, again.encode(ALGEBRA + COOKING))
    assert X.shape == (8, 6) and X.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(X, axis=1), 1.0, atol=1e-5)
    assert tfidf.embedder_id.startswith("tfidf:") and tfidf.embedder_id.endswith(":d6")
    # A different fit set gives a different fingerprint.
    other = embed.fit_tfidf(ALGEBRA + COOKING[:3], dim=6, seed=0, progress=False)
    assert other.embedder_id != tfidf.embedder_id
    # Unknown words only: no direction, zero vector (documented).
    assert not tfidf.encode(["zzzz qqqq"]).any()


def test_tfidf_small_fit_caps_dimension(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO):
        small = embed.fit_tfidf(ALGEBRA, dim=384, seed=0, progress=False)
    assert small.dim == 3 and small.embedder_id.endswith(":d3")
    # expected on a small log and nothing a user can act on: a detail (-v), not a warning on every build
    assert [r.levelno for r in caplog.records if "SVD components" in r.getMessage()] == [logging.INFO]


def test_embedder_ids_differ(minilm: embed.MiniLMEmbedder, tfidf: embed.TfidfEmbedder) -> None:
    f32 = embed.MiniLMEmbedder(bfloat16=not minilm.bfloat16)
    assert len({minilm.embedder_id, tfidf.embedder_id, f32.embedder_id}) == 3


def test_make_embedder_errors() -> None:
    with pytest.raises(ValueError, match="unknown embedder 'bert'"):
        embed.make_embedder("bert")
    with pytest.raises(ValueError, match="fit_texts"):
        embed.make_embedder("tfidf")
    with pytest.raises(TypeError, match="text 1 is a NoneType"):
        embed.fit_tfidf(["a b", None, "c d"])


def test_embed_batches_matches_encode(tfidf: embed.TfidfEmbedder) -> None:
    texts = ALGEBRA + COOKING
    np.testing.assert_allclose(embed.embed_batches(texts, tfidf, batch_size=3), tfidf.encode(texts), atol=1e-6)
    assert embed.embed_batches([], tfidf).shape == (0, 6)


def test_cache_hit_does_not_reembed(db_path: Path, tfidf: embed.TfidfEmbedder) -> None:
    counting = CountingEmbedder(tfidf)
    texts = [ALGEBRA[0], COOKING[0], ALGEBRA[0], ALGEBRA[1]]  # a duplicate is embedded once
    first = embedded(db_path, texts, counting)
    assert sorted(counting.seen) == sorted({ALGEBRA[0], COOKING[0], ALGEBRA[1]})
    np.testing.assert_allclose(first, tfidf.encode(texts), atol=1e-6)
    np.testing.assert_array_equal(first[0], first[2])

    counting.seen.clear()
    more = [COOKING[1], ALGEBRA[1], COOKING[0], ALGEBRA[0]]
    second = embedded(db_path, more, counting)
    assert counting.seen == [COOKING[1]]  # only the new text
    np.testing.assert_allclose(second, tfidf.encode(more), atol=1e-6)
    assert second.dtype == np.float32 and second.shape == (4, 6)

    counting.seen.clear()
    embedded(db_path, more, counting)
    assert counting.seen == []
    with store.opened(db_path, read_only=True) as con:
        counts = store.query(con, "embedding_counts")
    assert counts.to_dict("records")[0]["n_vectors"] == 4


def test_cache_is_per_embedder(db_path: Path, tfidf: embed.TfidfEmbedder) -> None:
    other = embed.fit_tfidf(ALGEBRA + COOKING, dim=5, seed=1, progress=False)
    embedded(db_path, ALGEBRA, tfidf)
    counting = CountingEmbedder(other)
    X = embedded(db_path, ALGEBRA, counting)
    assert counting.seen == ALGEBRA and X.shape == (4, 5)
    with store.opened(db_path, read_only=True) as con:
        counts = store.query(con, "embedding_counts")
    assert sorted(counts["n_vectors"]) == [4, 4]


def test_cache_keys_are_text_hashes(db_path: Path, tfidf: embed.TfidfEmbedder) -> None:
    texts = ["naïve café — 数学 equation", "plain ascii equation", ""]
    embedded(db_path, texts, tfidf)
    with store.opened(db_path, read_only=True) as con:
        counts = store.query(con, "embedding_counts")
    assert counts["n_vectors"].tolist() == [3]
    keys = set(store.read_only_query(db_path, "select text_hash from embeddings")["text_hash"])
    assert keys == {embed.text_hash(t) for t in texts}


def test_cache_chunked_writes_and_empty_input(db_path: Path, tfidf: embed.TfidfEmbedder) -> None:
    texts = [f"{w} number {i}" for i, w in enumerate(ALGEBRA * 5)]
    shown = embed.fit_tfidf(ALGEBRA + COOKING, dim=6, seed=0, progress=True)  # the progress-bar path too
    X = embedded(db_path, texts, shown, chunk_texts=3)
    np.testing.assert_allclose(X, tfidf.encode(texts), atol=1e-6)
    assert embedded(db_path, [], tfidf).shape == (0, 6)


def test_cache_with_minilm(db_path: Path, minilm: embed.MiniLMEmbedder) -> None:
    X = embedded(db_path, COOKING, minilm)
    np.testing.assert_allclose(X, minilm.encode(COOKING), atol=1e-6)
    counting = CountingEmbedder(minilm)
    np.testing.assert_array_equal(embedded(db_path, COOKING[::-1], counting), X[::-1])
    assert counting.seen == []


def test_embed_batches_on_dask_workers(tfidf: embed.TfidfEmbedder, minilm: embed.MiniLMEmbedder) -> None:
    from distributed import Client, LocalCluster

    assert isinstance(tfidf, embed.Embedder) and isinstance(minilm, embed.Embedder)
    texts = ALGEBRA + COOKING
    # A worker process: the embedder crosses by pickle, as in the nightly build.
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        X = embed.embed_batches(texts, tfidf, batch_size=3, client=client)
    np.testing.assert_allclose(X, tfidf.encode(texts), atol=1e-6)


def test_tfidf_round_trips_without_pickle(tfidf: embed.TfidfEmbedder) -> None:
    back = embed.tfidf_from_bytes(embed.tfidf_to_bytes(tfidf))
    texts = ["a new prompt about cooking", "unseen words only zzz", ALGEBRA[0]]
    assert back.embedder_id == tfidf.embedder_id
    np.testing.assert_array_equal(back.encode(texts), tfidf.encode(texts))
