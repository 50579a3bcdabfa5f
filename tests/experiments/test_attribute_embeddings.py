"""Attribute embeddings in an evaluation: heads fitted on the training prompts' labels only, every router uses them."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from tests.experiments.test_transfer import _topic_split
from uniroute.embed.attributes import read_attribute_labels
from uniroute.operations import Context, attribute_embeddings


def _labels(frame: pd.DataFrame, path) -> pd.DataFrame:
    """Rule-made labels (no LLM here): attribute 'math' when a prompt names a math word, 'code' a code word."""
    prompts = frame.drop_duplicates("prompt_id")
    labels = pd.DataFrame({
        "prompt_id": prompts.prompt_id,
        "math": prompts.prompt.str.contains("integral|matrix|prime|equation").astype(int),
        "code": prompts.prompt.str.contains("python|function|loop|array").astype(int),
    })
    labels.to_csv(path, index=False)
    return labels


def test_heads_are_fitted_on_the_allowed_labelled_prompts_only(tmp_path, db_path) -> None:
    train, test = _topic_split(200)
    _labels(pd.concat([train, test]), tmp_path / "labels.csv")
    labels = read_attribute_labels(tmp_path / "labels.csv")
    both = pd.concat([train, test]).drop_duplicates("prompt_id")
    ids, texts = both.prompt_id.tolist(), both.prompt.tolist()
    X, embedder_id, info = attribute_embeddings(Context.at(db_path), texts, ids, labels, "tfidf", 0,
                                                fit_ids=set(train.prompt_id))
    assert X.shape == (len(ids), 3) and np.allclose(np.linalg.norm(X, axis=1), 1.0)
    assert info["labelled_prompts_fitted"] == train.prompt_id.nunique()
    assert embedder_id.startswith("attributes:") and info["attributes"] == ["math", "code"]
    with pytest.raises(ValueError, match="only 0 of the prompts to fit on have attribute labels"):
        attribute_embeddings(Context.at(db_path), texts, ids, labels, "tfidf", 0, fit_ids={"nobody"})


def test_cli_transfer_with_the_attribute_embedder(tmp_path, home, monkeypatch) -> None:
    from typer.testing import CliRunner

    from uniroute.cli import app

    train, test = _topic_split(240)
    train_path, test_path, labels_path = tmp_path / "train.parquet", tmp_path / "test.parquet", tmp_path / "l.csv"
    train.to_parquet(train_path)
    test.to_parquet(test_path)
    _labels(train, labels_path)  # only the training log is labelled: test prompts get predicted attributes
    monkeypatch.setenv("UNIROUTE_HOME", str(home))
    out = tmp_path / "t.json"
    result = CliRunner().invoke(app, [
        "evaluate", "--data", str(train_path), "--test-data", str(test_path), "--trials", "2", "--workers", "0",
        "--embedder", "attributes", "--attribute-base", "tfidf", "--attribute-labels", str(labels_path),
        "--methods", "zero,knn,kmeans", "--out", str(out)])
    assert result.exit_code == 0, result.output
    saved = json.loads(out.read_text())
    assert saved["embedder_id"].startswith("attributes:") and set(saved["methods"]) == {"zero", "knn", "kmeans"}
    assert saved["attribute_heads"]["labelled_prompts_fitted"] == train.prompt_id.nunique()
    missing = CliRunner().invoke(app, ["evaluate", "--data", str(train_path), "--out", str(out),
                                       "--embedder", "attributes"])
    assert missing.exit_code == 1 and "--attribute-labels" in missing.output
