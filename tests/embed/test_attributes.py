"""Prompt-attribute embedder: heads distilled on a frozen embedder, unit rows that keep the attribute level."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from uniroute.embed import fit_tfidf, make_embedder
from uniroute.embed.attributes import (
    AttributeEmbedder,
    fit_attribute_embedder,
    fit_attribute_heads,
    read_attribute_labels,
)

CODE = ["write a python function that sorts a list", "python function to reverse a string in place",
        "write a function returning the sum of an array", "python code to parse a json file"]
PROSE = ["tell me a story about the sea", "describe a quiet morning by the lake",
         "a poem about autumn leaves", "tell me about your favourite holiday"]


def test_heads_learn_separable_attributes_and_a_constant_one_gets_a_bias_only_head() -> None:
    X = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9]])
    labels = np.array([[1, 1], [1, 1], [0, 1], [0, 1]])
    heads = fit_attribute_heads(X, labels, ("code", "always"), "base", c=100.0)
    p = heads.probabilities(X)
    assert (p[:, 0] > 0.5).tolist() == [True, True, False, False]
    assert np.allclose(p[:, 1], 0.999) and np.all(heads.weights[:, 1] == 0)
    rows = heads.transform(X)
    assert rows.shape == (4, 3) and np.allclose(np.linalg.norm(rows, axis=1), 1.0)


def test_unit_rows_keep_how_many_attributes_a_prompt_has() -> None:
    heads = fit_attribute_heads(np.eye(2), np.array([[1, 1], [0, 0]]), ("a", "b"), "base", c=1e4)
    low, high = heads.transform(np.array([[0.0, 1.0], [1.0, 0.0]]))
    assert np.linalg.norm(low - high) > 0.5  # all-low and all-high differ, though phi is parallel in both


def test_an_attribute_embedder_on_a_real_frozen_embedder_embeds_unlabelled_prompts() -> None:
    base = fit_tfidf(CODE + PROSE + ["sort the numbers in a python list"], progress=False)
    labels = np.array([[1, 0]] * 4 + [[0, 1]] * 4)
    embedder = fit_attribute_embedder(base, CODE + PROSE, labels, names=("technical", "creative"))
    assert isinstance(embedder, AttributeEmbedder) and embedder.dim == 3
    assert embedder.embedder_id.startswith("attributes:") and embedder.embedder_id.endswith(base.embedder_id)
    p = embedder.heads.probabilities(base.encode(["python function to sort a list", "a story about autumn"]))
    assert p[0, 0] > p[1, 0] and p[1, 1] > p[0, 1]
    other = fit_attribute_embedder(base, CODE + PROSE, labels[::-1], names=("technical", "creative"))
    assert other.embedder_id != embedder.embedder_id  # other labels, other heads, another embedder


@pytest.mark.slow
def test_the_factory_distils_the_seven_attributes_on_minilm() -> None:
    labels = np.array([[1, 0, 0, 0, 0, 1, 0]] * 2 + [[0, 0, 0, 0, 1, 0, 0]] * 2)
    embedder = make_embedder("attributes", fit_texts=CODE[:2] + PROSE[:2], progress=False, attribute_labels=labels,
                             attribute_base="minilm")
    assert embedder.dim == 8 and embedder.encode(["hello"]).shape == (1, 8)
    assert embedder.embedder_id.endswith(embedder.base.embedder_id)


def test_without_labels_the_factory_refuses_attributes_in_one_line() -> None:
    # What build and onboarding get when UNIROUTE_EMBEDDER=attributes: its routers could not be stored.
    with pytest.raises(ValueError, match="for evaluation only") as info:
        make_embedder("attributes", progress=False)
    assert "\n" not in str(info.value) and "static" in str(info.value)


def test_labels_file_errors_name_the_row_and_value(tmp_path) -> None:
    path = tmp_path / "labels.csv"
    pd.DataFrame({"prompt_id": ["a", "b"], "creativity": [1, 2]}).to_csv(path, index=False)
    with pytest.raises(ValueError, match=r"labels\.csv: row 2: creativity = 2 is not 0 or 1"):
        read_attribute_labels(path)
    pd.DataFrame({"prompt_id": ["a", "a"], "creativity": [1, 0]}).to_csv(path, index=False)
    with pytest.raises(ValueError, match=r"prompt_id 'a' is labelled twice"):
        read_attribute_labels(path)
    pd.DataFrame({"prompt_id": ["007", "b"], "creativity": [1, 0]}).to_csv(path, index=False)
    assert read_attribute_labels(path).index.tolist() == ["007", "b"]  # ids stay text
