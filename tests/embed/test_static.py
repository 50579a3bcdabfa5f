"""The static embedder: distilled once from the local MiniLM into a temporary cache, encoded without torch."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from uniroute import embed
from uniroute.embed import static as static_module
from uniroute.embed.static import load_static, sif_weights

from .test_embed import ALGEBRA, COOKING


def test_sif_weights_by_hand() -> None:
    # Zipf: p proportional to 1/2, 1/3 -> 0.6, 0.4; weight a / (a + p).
    np.testing.assert_allclose(sif_weights(2, 0.1), [0.1 / 0.7, 0.1 / 0.5])
    weights = sif_weights(1000, 1e-4)
    assert (np.diff(weights) > 0).all()  # rarer (later) tokens weigh more


def test_make_embedder_needs_a_cache_folder() -> None:
    for name in embed.BUILT_EMBEDDERS:
        with pytest.raises(ValueError, match=f"the {name} embedder builds its model file once.*pass cache_dir"):
            embed.make_embedder(name)
    assert set(embed.EMBEDDERS) == {"minilm", "minilm-onnx", "static", "static-tuned", "tfidf"}


@pytest.fixture(scope="module")
def cache_dir(built_embedders_cache: Path) -> Path:
    return built_embedders_cache  # the session's: the model file is built once for every test that needs it


@pytest.fixture(scope="module")
def static(cache_dir: Path) -> embed.StaticEmbedder:
    return embed.make_embedder("static", cache_dir=cache_dir, progress=False)


@pytest.mark.slow  # the distillation runs every vocabulary token through MiniLM: about a minute on one core
def test_static_shape_norm_and_semantics(static: embed.StaticEmbedder) -> None:
    X = static.encode(ALGEBRA + COOKING)
    assert X.shape == (8, 256) and X.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(X, axis=1), 1.0, atol=1e-5)
    sims = X @ X.T
    np.fill_diagonal(sims, -1)
    assert (sims.argmax(axis=1)[:4] < 4).all() and (sims.argmax(axis=1)[4:] >= 4).all()
    # Order-free, special tokens ignored, nothing to sum gives the zero vector.
    a, b = static.encode(["bake the bread", "the bread bake [MASK]"])
    np.testing.assert_allclose(a, b, atol=1e-6)
    assert not static.encode(["", "[CLS] [SEP] [PAD]"]).any()
    assert static.encode([]).shape == (0, 256)


@pytest.mark.slow
def test_static_id_table_and_reuse(static: embed.StaticEmbedder, cache_dir: Path) -> None:
    ident = static.embedder_id
    assert ident.startswith("static:all-MiniLM-L6-v2@") and ":m2v-pca256-sif0.0001:all:d256:" in ident
    assert ident.endswith(static.fingerprint)
    vectors, used = static.table()
    assert vectors.shape == (30522, 256) and used.sum() == 30522 - 994 - 5  # no [unusedN], no special tokens
    mtime = os.path.getmtime(static.table_file)
    again = load_static(cache_dir, progress=False)
    assert again.embedder_id == ident and os.path.getmtime(again.table_file) == mtime
    assert len(pickle.dumps(static)) < 10_000


@pytest.mark.slow
def test_static_left_truncation(static: embed.StaticEmbedder) -> None:
    short = embed.StaticEmbedder(static.table_file, static.fingerprint, dim=256, max_tokens=4)  # ba ##ke the bread
    assert ":left4:" in short.embedder_id and short.embedder_id != static.embedder_id
    prefix = "the history of the roman empire and its provinces " * 20
    np.testing.assert_allclose(short.encode([prefix + "bake the bread"]), static.encode(["bake the bread"]), atol=1e-6)
    assert not np.allclose(static.encode([prefix + "bake the bread"]), static.encode(["bake the bread"]), atol=1e-2)


@pytest.mark.slow
def test_static_on_a_dask_worker_and_without_torch(static: embed.StaticEmbedder, cache_dir: Path) -> None:
    from distributed import Client, LocalCluster

    texts = ALGEBRA + COOKING
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        X = embed.embed_batches(texts, static, batch_size=3, client=client)
    np.testing.assert_array_equal(X, static.encode(texts))
    code = ("import sys; from pathlib import Path; from uniroute import embed\n"
            "e = embed.make_embedder('static', cache_dir=Path(sys.argv[1]), progress=False)\n"
            "e.encode(['route this prompt']); print(e.embedder_id, 'torch' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code, str(cache_dir)], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert out.stdout.split() == [static.embedder_id, "False"]


@pytest.mark.slow
def test_static_state_travels_and_restores_the_same_embedder(static: embed.StaticEmbedder, tmp_path: Path) -> None:
    """The bytes stored with a router (embed.portable) rebuild an embedder with the same id and vectors."""
    restored = embed.embedder_from_state(embed.embedder_state(static), tmp_path)
    assert restored.embedder_id == static.embedder_id and restored.table_file != static.table_file
    np.testing.assert_array_equal(restored.encode(ALGEBRA), static.encode(ALGEBRA))

    # Restored once, found again by its id alone (what `uniroute route` reads instead of the stored state), and
    # encoding from the table's memory-mapped copy gives the same bytes as from the npz.
    assert embed.restored_embedder(static.embedder_id, tmp_path / "elsewhere") is None
    assert embed.restored_embedder(static.embedder_id.replace(":d", ":d9"), tmp_path) is None  # another id: no
    again = embed.restored_embedder(static.embedder_id, tmp_path)
    assert again is not None and again.embedder_id == static.embedder_id and again.table_file == restored.table_file
    assert list(Path(restored.table_file).parent.glob("*.vectors.npy"))  # the copy the first encode wrote
    static_module._table.cache_clear()  # a new process: the copy is memory-mapped this time
    assert isinstance(again.table()[0], np.memmap)
    np.testing.assert_array_equal(again.encode(ALGEBRA), static.encode(ALGEBRA))
