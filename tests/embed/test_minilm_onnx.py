"""MiniLM on ONNX Runtime, exported from the local weights into a temporary cache: the same vectors as
`minilm` in float32, close ones in int8, and no torch at encode time."""

from __future__ import annotations

import io
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from uniroute import embed
from uniroute.embed.minilm_onnx import load_minilm_onnx

from .test_embed import ALGEBRA, COOKING

pytestmark = pytest.mark.slow  # two exports (about 10 s each) and MiniLM itself

LONG = ("Here is a worked example about the history of the Roman empire and its provinces. " * 30
        + " Question: how do I bake sourdough bread?")
TEXTS = ALGEBRA + COOKING + [LONG, ""]


@pytest.fixture(scope="module")
def cache_dir(built_embedders_cache: Path) -> Path:
    return built_embedders_cache  # the session's: the model file is built once for every test that needs it


@pytest.fixture(scope="module")
def minilm_vectors() -> np.ndarray:
    return embed.make_embedder("minilm", batch_size=16, progress=False).encode(TEXTS)


@pytest.fixture(scope="module")
def float_onnx(cache_dir: Path) -> embed.MiniLMOnnxEmbedder:
    return load_minilm_onnx(cache_dir, quantization="none", threads=1, progress=False)


@pytest.fixture(scope="module")
def int8_onnx(cache_dir: Path) -> embed.MiniLMOnnxEmbedder:
    return embed.make_embedder("minilm-onnx", cache_dir=cache_dir, progress=False)


def test_float_graph_reproduces_minilm(float_onnx: embed.MiniLMOnnxEmbedder, minilm_vectors: np.ndarray) -> None:
    X = float_onnx.encode(TEXTS)
    assert X.shape == (len(TEXTS), 384) and X.dtype == np.float32
    # Left truncation to 256 tokens included (LONG), and batches of mixed lengths (padding is masked out).
    np.testing.assert_allclose(X, minilm_vectors, atol=2e-5)
    small_batches = embed.MiniLMOnnxEmbedder(float_onnx.model_file, float_onnx.fingerprint, "none", batch_size=3)
    np.testing.assert_allclose(small_batches.encode(TEXTS), X, atol=2e-5)


def test_int8_is_close_to_minilm(int8_onnx: embed.MiniLMOnnxEmbedder, minilm_vectors: np.ndarray) -> None:
    X = int8_onnx.encode(TEXTS)
    np.testing.assert_allclose(np.linalg.norm(X, axis=1), 1.0, atol=1e-5)
    cosine = np.sum(X * minilm_vectors, axis=1)
    assert cosine.min() > 0.95 and cosine.mean() > 0.98, cosine
    sims = X[:8] @ X[:8].T
    np.fill_diagonal(sims, -1)
    assert (sims.argmax(axis=1)[:4] < 4).all() and (sims.argmax(axis=1)[4:] >= 4).all()


def test_ids_name_quantization_and_built_file(float_onnx: embed.MiniLMOnnxEmbedder,
                                               int8_onnx: embed.MiniLMOnnxEmbedder, cache_dir: Path) -> None:
    assert int8_onnx.embedder_id.startswith("minilm-onnx:") and ":left256:int8pc:alone:d384:" in int8_onnx.embedder_id
    assert ":f32:" in float_onnx.embedder_id and float_onnx.fingerprint != int8_onnx.fingerprint
    assert int8_onnx.embedder_id.endswith(int8_onnx.fingerprint)
    assert os.path.getsize(int8_onnx.model_file) < os.path.getsize(float_onnx.model_file) / 3
    # Loading again reuses the built file: same id, nothing rebuilt.
    mtime = os.path.getmtime(int8_onnx.model_file)
    again = embed.make_embedder("minilm-onnx", cache_dir=cache_dir, progress=False)
    assert again.embedder_id == int8_onnx.embedder_id and os.path.getmtime(again.model_file) == mtime


def test_pickles_without_the_model(int8_onnx: embed.MiniLMOnnxEmbedder) -> None:
    data = pickle.dumps(int8_onnx)
    assert len(data) < 10_000
    np.testing.assert_array_equal(pickle.loads(data).encode(ALGEBRA), int8_onnx.encode(ALGEBRA))


def test_encoding_does_not_import_torch(int8_onnx: embed.MiniLMOnnxEmbedder, cache_dir: Path) -> None:
    code = ("import sys; from pathlib import Path; from uniroute import embed\n"
            "e = embed.make_embedder('minilm-onnx', cache_dir=Path(sys.argv[1]), progress=False)\n"
            "X = e.encode(['route this prompt'])\n"
            "print(e.embedder_id, X.shape, 'torch' in sys.modules, 'transformers' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code, str(cache_dir)], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert out.stdout.split() == [int8_onnx.embedder_id, "(1,", "384)", "False", "False"]


def test_unknown_quantization_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown quantization 'int4'"):
        load_minilm_onnx(tmp_path, quantization="int4")


def test_the_state_restores_alone_and_an_older_state_keeps_its_batches(int8_onnx: embed.MiniLMOnnxEmbedder,
                                                                      tmp_path: Path) -> None:
    restored = embed.embedder_from_state(embed.embedder_state(int8_onnx), tmp_path)
    assert restored.embedder_id == int8_onnx.embedder_id and restored.per_prompt
    np.testing.assert_array_equal(restored.encode(TEXTS), int8_onnx.encode(TEXTS))
    # A router built before prompts ran alone stored a state without per_prompt: it still gets the padded batches
    # it was fitted on, under its own id, and the cache never mixes those vectors with the ones encoded alone.
    state = np.load(io.BytesIO(embed.embedder_state(int8_onnx)), allow_pickle=False)
    header = {k: v for k, v in json.loads(str(state["header"])).items() if k != "per_prompt"}
    buffer = io.BytesIO()
    np.savez(buffer, header=np.array(json.dumps(header)), content=state["content"])
    older = embed.embedder_from_state(buffer.getvalue(), tmp_path)
    assert not older.per_prompt and ":int8pc:d384:" in older.embedder_id
    assert older.embedder_id != int8_onnx.embedder_id
    assert not np.array_equal(older.encode(TEXTS), int8_onnx.encode(TEXTS))
