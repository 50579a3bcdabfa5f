"""The static table fitted to a teacher's sentence vectors (embed.static_tuned): deterministic, unseen tokens keep
their mapped distilled rows, the id follows the fitting prompts, the state round-trips.

Fast: a real StaticEmbedder over a small random table file (MiniLM's vocabulary, 4 columns: too few for the
linear map alone to fit the teacher) and a real TF-IDF teacher (8-d), so no model file is built here; the
product's pairing (static + minilm-onnx) is in the slow test.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from uniroute import embed
from uniroute.cli import app
from uniroute.embed.static import StaticEmbedder
from uniroute.embed.static_tuned import fit_static_tuned, prompt_token_ids

from .test_embed import ALGEBRA, COOKING

VOCABULARY = 30522  # all-MiniLM-L6-v2's WordPiece vocabulary
TEXTS = ALGEBRA + COOKING + ["solve the quadratic and bake the bread", "simmer the sauce, then factor the polynomial"]


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> StaticEmbedder:
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(VOCABULARY, 4)).astype(np.float32)
    used = np.ones(VOCABULARY, dtype=bool)
    used[[0, 100, 101, 102, 103]] = False  # [PAD] [UNK] [CLS] [SEP] [MASK], as static's table
    path = tmp_path_factory.mktemp("table") / "static.npz"
    np.savez(path, vectors=vectors, used=used)
    return StaticEmbedder(str(path), "fake0table00", dim=4, progress=False)


@pytest.fixture(scope="module")
def teacher() -> embed.TfidfEmbedder:
    return embed.fit_tfidf(TEXTS, dim=8, seed=0, progress=False)


def test_fit_is_deterministic_and_encodes_unit_rows(base, teacher):
    a = fit_static_tuned(base, teacher, TEXTS, alpha=0.1, progress=False)
    b = fit_static_tuned(base, teacher, TEXTS, alpha=0.1, progress=False)
    assert a.embedder_id == b.embedder_id and np.array_equal(a.vectors, b.vectors)
    X = a.encode(TEXTS)
    assert X.shape == (len(TEXTS), 8) and X.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(X, axis=1), 1.0, atol=1e-5)
    assert not a.encode(["", "[CLS] [PAD]"]).any() and a.encode([]).shape == (0, 8)
    # Closer to the teacher than the base mapped alone would be: the fit moved the seen rows toward it.
    assert np.mean(np.sum(X * teacher.encode(TEXTS), axis=1)) > 0.9
    assert a.embedder_id.startswith("static-tuned:static@fake0table00:teacher@") and ":d8:" in a.embedder_id


def test_unseen_tokens_keep_their_distilled_row_mapped(base, teacher):
    tuned = fit_static_tuned(base, teacher, TEXTS, alpha=0.1, progress=False)
    table, used = base.table()
    seen = np.unique(np.concatenate(prompt_token_ids(TEXTS, used)))
    unseen = np.setdiff1d(np.flatnonzero(used), seen)
    # The unseen rows are the base rows through one linear map: least squares recovers it exactly from them.
    W = np.linalg.lstsq(table[unseen].astype(np.float64), tuned.vectors[unseen].astype(np.float64), rcond=None)[0]
    np.testing.assert_allclose(table[unseen] @ W, tuned.vectors[unseen], atol=1e-4)
    assert (np.linalg.norm(tuned.vectors[unseen], axis=1) > 1e-3).all()  # kept, not zeroed
    # The seen rows are not on that map: they were fitted.
    assert np.abs(table[seen] @ W - tuned.vectors[seen]).max() > 1e-2


def test_the_id_changes_with_the_fitting_prompts(base, teacher):
    one = fit_static_tuned(base, teacher, TEXTS, progress=False)
    other = fit_static_tuned(base, teacher, TEXTS[:-1], progress=False)
    assert one.embedder_id != other.embedder_id


def test_the_state_round_trips_and_pickles(base, teacher):
    tuned = fit_static_tuned(base, teacher, TEXTS, progress=False)
    restored = embed.embedder_from_state(embed.embedder_state(tuned))
    assert restored.embedder_id == tuned.embedder_id
    assert np.array_equal(restored.encode(TEXTS), tuned.encode(TEXTS))
    assert np.array_equal(pickle.loads(pickle.dumps(tuned)).encode(TEXTS), tuned.encode(TEXTS))


def test_teacher_vectors_come_from_the_callers_function(base, teacher):
    asked: list[int] = []

    def cached(model, texts):
        asked.append(len(texts))
        return model.encode(texts)

    tuned = fit_static_tuned(base, teacher, TEXTS, teacher_vectors=cached, progress=False)
    assert asked == [len(TEXTS)]
    assert tuned.embedder_id == fit_static_tuned(base, teacher, TEXTS, progress=False).embedder_id


def test_the_kind_is_fitted_served_and_needs_fit_texts(tmp_path: Path):
    kind = embed.embedder_kind("static-tuned")
    assert kind.fitted and kind.serves_builds and kind.built_file
    with pytest.raises(ValueError, match="fitted on prompt texts: pass fit_texts"):
        embed.make_embedder("static-tuned", cache_dir=tmp_path)


@pytest.mark.slow  # builds the static and ONNX model files once per session (about two minutes on one core)
def test_a_router_built_on_it_routes_a_file(tmp_path: Path, built_embedders_cache: Path, monkeypatch):
    from uniroute.synth import write_synthetic_logs

    home = tmp_path / "home"
    home.mkdir()
    (home / "cache").symlink_to(built_embedders_cache, target_is_directory=True)
    monkeypatch.setenv("UNIROUTE_HOME", str(home))
    monkeypatch.setenv("UNIROUTE_MLFLOW", "false")
    runner = CliRunner()
    summary = write_synthetic_logs(tmp_path / "logs", n_prompts=200, n_models=3, n_topics=3, seed=1, with_split=True)
    assert runner.invoke(app, ["ingest", str(summary.logs_path)], catch_exceptions=False).exit_code == 0
    built = runner.invoke(app, ["build", "--embedder", "static-tuned", "--kinds", "kmeans"], catch_exceptions=False)
    assert built.exit_code == 0, built.output
    ids = json.loads(runner.invoke(app, ["sql", "select distinct embedder_id from routers", "--json"]).stdout)
    assert [row["embedder_id"].split(":")[0] for row in ids] == ["static-tuned"]
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("\n".join(json.dumps({"prompt": p}) for p in ALGEBRA[:2] + COOKING[:1]) + "\n")
    routed = runner.invoke(app, ["route", "--file", str(prompts), "--lambda", "0"], catch_exceptions=False)
    assert routed.exit_code == 0, routed.output
    lines = [json.loads(line) for line in routed.stdout.splitlines()]
    assert len(lines) == 3 and all(line["model"] for line in lines)
